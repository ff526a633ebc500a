-- wrk script: prints finer latency percentiles than --latency does (docs/benchmarks.md, small
-- requests, on Node's tail). Usage against any server, e.g. the node-http floor:
--   wrk -t2 -c200 -d8s --timeout 30s -s bench/percentiles.lua http://127.0.0.1:PORT/small.bin
done = function(summary, latency, requests)
  for _, p in pairs({50, 90, 95, 97, 98, 99, 99.5, 99.9}) do
    io.write(string.format("p%g=%.1fms ", p, latency:percentile(p) / 1000))
  end
  io.write(string.format("max=%.1fms\n", latency.max / 1000))
end
