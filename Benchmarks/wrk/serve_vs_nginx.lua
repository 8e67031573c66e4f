-- wrk script of Benchmarks/serve_vs_nginx.py. Arguments after `--`:
--   get PATHS        GETs the paths listed in PATHS (one per line), in turn, from a random start
--                    in each thread.
--   put BODY PREFIX N T
--                    PUTs BODY's bytes (the first 16 made unique per request, so a
--                    content-addressed server cannot answer from a stored copy) to PREFIX<k>,
--                    k going round 0..N-1 over all T threads (wrk's -t; so the store stays N
--                    values big).
-- done() prints one line `JSON {...}`: requests, bytes, duration and latency (microseconds:
-- mean, max, p50, p90, p99, p99.9) and the error counts of the whole run.
local threads = 0
local mode, paths, at, base, prefix, keys, nthreads  -- `id` is the global setup() gives each thread
local count = 0

setup = function(thread)
  thread:set("id", threads)
  threads = threads + 1
end

init = function(args)
  mode = args[1]
  if mode == "get" then
    paths = {}
    for line in io.lines(args[2]) do
      if #line > 0 then paths[#paths + 1] = line end
    end
    at = math.random(#paths)
  elseif mode == "put" then
    local file = assert(io.open(args[2], "rb"))
    base = file:read("*a")
    file:close()
    prefix = args[3]
    keys = tonumber(args[4])
    nthreads = tonumber(args[5])
  else
    error("serve_vs_nginx.lua: the first argument is get or put, not " .. tostring(mode))
  end
end

request = function()
  if mode == "get" then
    at = at % #paths + 1
    return wrk.format("GET", paths[at])
  end
  count = count + 1
  local tag = string.format("%8d%8d", id, count % 100000000)
  local k = (count * nthreads + id) % keys
  return wrk.format("PUT", prefix .. k, nil, tag .. base:sub(17))
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'JSON {"requests": %d, "bytes": %d, "duration_us": %d, ' ..
    '"latency_us": {"mean": %.1f, "max": %d, "p50": %d, "p90": %d, "p99": %d, "p99.9": %d}, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}}\n',
    summary.requests, summary.bytes, summary.duration,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9),
    e.connect, e.read, e.write, e.status, e.timeout))
end
