-- SPDX-License-Identifier: MIT
-- wrk script for the CRUD mix: per connection, a cycle of GET /fruits/{seed id}, POST /fruits, GET /fruits,
-- DELETE of the fruit that connection created last. Rows created are deleted again, so the table stays small.
local counter = 0
local created = {}
local step = 0

init = function(args)
   counter = math.random(1, 1000000) * 1000
end

request = function()
   step = step + 1
   local phase = step % 4
   if phase == 1 then
      return wrk.format("GET", "/fruits/" .. math.random(1, 3))
   elseif phase == 2 then
      counter = counter + 1
      return wrk.format("POST", "/fruits", {["Content-Type"] = "application/json"},
                        '{"name":"bench ' .. counter .. '"}')
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
