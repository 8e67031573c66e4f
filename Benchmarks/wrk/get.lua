-- wrk: GETs the paths listed in the file given after `--` (one per line), in turn, from a
-- random start in each thread.
local paths = {}
local at = 0

init = function(args)
  for line in io.lines(args[1]) do
    if #line > 0 then paths[#paths + 1] = line end
  end
  at = math.random(#paths)
end

request = function()
  at = at % #paths + 1
  return wrk.format("GET", paths[at])
end
