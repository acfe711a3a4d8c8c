-- SPDX-License-Identifier: MIT
-- wrk script for the write of run.py's fixed scenario (its warm-up): POST /fruits, then DELETE of a row this thread
-- created, alternately, so that the table ends as it began (a POST whose answer has not come yet leaves its DELETE
-- for later: the next request is a POST again).
local counter = 0
local created = {}

init = function(args)
   counter = math.random(1, 1000000) * 1000
end

request = function()
   local id = table.remove(created)
   if id ~= nil then
      return wrk.format("DELETE", "/fruits/" .. id)
   end
   counter = counter + 1
   return wrk.format("POST", "/fruits", {["Content-Type"] = "application/json"}, '{"name":"warm ' .. counter .. '"}')
end

response = function(status, headers, body)
   if status == 201 then
      local loc = headers["Location"] or headers["location"]
      if loc then
         table.insert(created, string.match(loc, "(%d+)$"))
      end
   end
end
