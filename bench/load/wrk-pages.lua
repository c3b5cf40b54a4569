-- wrk script of the bench (bench/load/load-wrk.js): one page per request over /page1.html ..
-- /page<BENCH_PAGES>.html, seeded by BENCH_SEED: uniform (BENCH_ZIPF unset), or Zipf(BENCH_ZIPF),
-- rank r (1-based) with weight 1 / r^s drawn by binary search in the cumulative weights. With
-- BENCH_SHIFT_SECONDS the ranking rotates by BENCH_SHIFT_STEP places every BENCH_SHIFT_SECONDS
-- seconds since BENCH_T0 (Unix seconds; os.time() has whole seconds, so an epoch may start up to
-- a second late). At the end one line "BENCH_RESULT {json}" with the request counts, errors and
-- latency percentiles in microseconds.

local pages = tonumber(os.getenv("BENCH_PAGES") or "25")
local zipf = tonumber(os.getenv("BENCH_ZIPF") or "")
local shiftSeconds = tonumber(os.getenv("BENCH_SHIFT_SECONDS") or "")
local shiftStep = tonumber(os.getenv("BENCH_SHIFT_STEP") or "1")
local t0 = tonumber(os.getenv("BENCH_T0") or "0")
local paths = {}
for i = 1, pages do paths[i] = "/page" .. i .. ".html" end

local cdf = nil
if zipf then
  cdf = {}
  local acc = 0
  for i = 1, pages do acc = acc + 1 / (i ^ zipf); cdf[i] = acc end
  for i = 1, pages do cdf[i] = cdf[i] / acc end
  cdf[pages] = 1
end

function init(args)
  math.randomseed(tonumber(os.getenv("BENCH_SEED") or "1"))
end

-- the 1-based rank of a Zipf draw: the first rank whose cumulative weight exceeds u
local function zipfRank()
  local u = math.random()
  local lo, hi = 1, pages
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] > u then hi = mid else lo = mid + 1 end
  end
  return lo
end

function request()
  if not cdf then
    return wrk.format("GET", paths[math.random(pages)])
  end
  local rank = zipfRank()
  if shiftSeconds then
    local epoch = math.floor((os.time() - t0) / shiftSeconds)
    rank = (rank - 1 + (epoch * shiftStep) % pages) % pages + 1
  end
  return wrk.format("GET", paths[rank])
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
