-- SPDX-License-Identifier: MIT
-- wrk script for the CRUD mix: per connection, a cycle of GET /fruits/{seed id}, POST /fruits, GET /fruits,
-- DELETE of the fruit that connection created last. Rows created are deleted again, so the table stays small.
-- With the argument `write` (wrk ... -- write; run.py's fixed scenario warms its write with it): POST /fruits, then
-- DELETE of a row this thread created, alternately (a POST whose answer has not come yet leaves its DELETE for
-- later: the next request is a POST again).
local counter = 0
local created = {}
local step = 0
local write_only = false

init = function(args)
   counter = math.random(1, 1000000) * 1000
   write_only = args[1] == "write"
end

local function post()
   counter = counter + 1
   return wrk.format("POST", "/fruits", {["Content-Type"] = "application/json"}, '{"name":"bench ' .. counter .. '"}')
end

request = function()
   if write_only then
      local id = table.remove(created)
      if id == nil then
         return post()
      end
      return wrk.format("DELETE", "/fruits/" .. id)
   end
   step = step + 1
   local phase = step % 4
   if phase == 1 then
      return wrk.format("GET", "/fruits/" .. math.random(1, 3))
   elseif phase == 2 then
      return post()
   elseif phase == 3 then
      return wrk.format("GET", "/fruits")
   else
      local id = table.remove(created)
      if id == nil then
         return wrk.format("GET", "/fruits/1")
      end
      return wrk.format("DELETE", "/fruits/" .. id)
   end
end

response = function(status, headers, body)
   if status == 201 then
      local loc = headers["Location"] or headers["location"]
      if loc then
         table.insert(created, string.match(loc, "(%d+)$"))
      end
   end
end
