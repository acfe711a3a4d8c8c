-- SPDX-License-Identifier: MIT
-- wrk script: sends DEPTH copies of the request in one write (HTTP/1.1 pipelining), as TechEmpower's
-- plaintext test does with 16. Usage: wrk -s bench/wrk/pipeline.lua URL -- 16
local batch

init = function(args)
   local depth = tonumber(args[1]) or 1
   local parts = {}
   for i = 1, depth do
      parts[i] = wrk.format()
   end
   batch = table.concat(parts)
end

request = function()
   return batch
end
