-- SPDX-License-Identifier: MIT
-- wrk script: a fixed number of requests cycling over paths, every answer counted by status.
--   wrk -t2 -c256 -d600s -s bench/wrk/mix.lua URL -- 1000000 /hello /fruits
-- Environment: MIX_THREADS (wrk's -t) and MIX_DONE (a file for finished threads). Each thread stops after its
-- share of the total; the last one to finish interrupts wrk (SIGINT, as ^C), whose -d is then only an upper
-- bound. done() prints "responses=N" and one "status_NNN=N" per status seen, which bench/measure reads
-- (wrk itself only says "Non-2xx").
local threads = {}
local paths = {}
local limit = 0
local step = 0
local nthreads = 1
counts = {}
responses = 0

setup = function(thread)
   table.insert(threads, thread)
end

init = function(args)
   local total = tonumber(args[1]) or 0
   for i = 2, #args do
      table.insert(paths, wrk.format("GET", args[i]))
   end
   if #paths == 0 then
      table.insert(paths, wrk.format("GET", "/"))
   end
   -- wrk starts every thread with the same arguments; the share is total / threads, rounded up
   nthreads = tonumber(os.getenv("MIX_THREADS") or "1")
   limit = math.ceil(total / nthreads)
end

-- Called once per thread when its share is answered: the last thread interrupts wrk (the shell's parent).
local function finished()
   wrk.thread:stop()
   local file = os.getenv("MIX_DONE")
   if file == nil then
      return
   end
   local f = io.open(file, "a")
   f:write("done\n")
   f:close()
   local n = 0
   for _ in io.lines(file) do
      n = n + 1
   end
   if n >= nthreads then
      -- system() ignores SIGINT until its shell returns: send it from a background child a moment later
      os.execute("(sleep 0.1; kill -INT $PPID) >/dev/null 2>&1 &")
   end
end

request = function()
   step = step + 1
   return paths[(step - 1) % #paths + 1]
end

response = function(status, headers, body)
   counts[status] = (counts[status] or 0) + 1
   responses = responses + 1
   if limit > 0 and responses == limit then
      finished()
   end
end

done = function(summary, latency, requests)
   local total, all = 0, {}
   for _, t in ipairs(threads) do
      total = total + t:get("responses")
      for status, n in pairs(t:get("counts")) do
         all[status] = (all[status] or 0) + n
      end
   end
   io.write(string.format("responses=%d\n", total))
   for status, n in pairs(all) do
      io.write(string.format("status_%d=%d\n", status, n))
   end
end
