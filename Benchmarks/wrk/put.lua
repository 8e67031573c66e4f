-- wrk: PUTs bodies the size of the file given after `--` (its bytes, with the first 16 made
-- unique per request, so a content-addressed server cannot answer from a stored copy) to
-- PREFIX<thread>-<n>, PREFIX being the second argument.
local threads = 0
local base, prefix  -- `id` is the global setup() gives each thread
local count = 0

setup = function(thread)
  thread:set("id", threads)
  threads = threads + 1
end

init = function(args)
  local file = assert(io.open(args[1], "rb"))
  base = file:read("*a")
  file:close()
  prefix = args[2]
end

request = function()
  count = count + 1
  local tag = string.format("%8d%8d", id, count)
  return wrk.format("PUT", prefix .. id .. "-" .. count, nil, tag .. base:sub(17))
end
