-- wrk script of the bench (bench/load-wrk.js): one page per request, uniform over
-- /page1.html .. /page<BENCH_PAGES>.html, seeded by BENCH_SEED; at the end one line
-- "BENCH_RESULT {json}" with the request counts, errors and latency percentiles in microseconds.

local pages = tonumber(os.getenv("BENCH_PAGES") or "25")
local paths = {}
for i = 1, pages do paths[i] = "/page" .. i .. ".html" end

function init(args)
  math.randomseed(tonumber(os.getenv("BENCH_SEED") or "1"))
end

function request()
  return wrk.format("GET", paths[math.random(pages)])
end

function done(summary, latency, requests)
  local e = summary.errors
  local parts = {
    string.format('"requests":%d', summary.requests),
    string.format('"bytes":%d', summary.bytes),
    string.format('"durationUs":%d', summary.duration),
    string.format('"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d', e.connect, e.read, e.write, e.status, e.timeout),
    string.format('"mean":%.3f,"stdev":%.3f,"max":%d,"min":%d', latency.mean, latency.stdev, latency.max, latency.min)
  }
  for _, p in ipairs({ 50, 90, 95, 99, 99.9 }) do
    parts[#parts + 1] = string.format('"p%s":%d', tostring(p), latency:percentile(p))
  end
  io.write("BENCH_RESULT {" .. table.concat(parts, ",") .. "}\n")
end
