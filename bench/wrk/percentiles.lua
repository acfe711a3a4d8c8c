-- SPDX-License-Identifier: MIT
-- wrk script: prints the 95th latency percentile (wrk's own --latency table stops at 50/75/90/99), in
-- microseconds, as a line "p95_us=N" that bench/measure reads.
done = function(summary, latency, requests)
   io.write(string.format("p95_us=%d\n", latency:percentile(95.0)))
end
