-- bench/wrk-pace.lua: wrk paced below saturation, for the load generators'
-- cost at a fixed rate (bench/perf.sh, bench/loadgen-cost.sh).
--
--   wrk -t1 -c50 -d5s -s bench/wrk-pace.lua http://127.0.0.1:PORT/1k.bin
--
-- wrk2's `wrk -R RATE` (an open model: requests due on a schedule, whatever
-- the responses do) is not packaged in Debian, and Debian's wrk 4.1 has no
-- -R. The nearest wrk 4.1 comes is its `delay()` hook: the milliseconds a
-- connection waits after a response before sending its next request. That is
-- a closed loop with think time, not an open model: each of the -c
-- connections carries one request at a time, so the rate is
--   connections / (latency + delay + the timer's lateness)
-- and cannot be set exactly. wrk's event loop (ae) keeps its timers in
-- whole milliseconds and they fire late (up to about a millisecond), so a
-- delay of 1 ms is a cycle of up to about 2 ms and 2 ms up to about 3 ms.
-- Alternating the two lands between their rates: with 50 connections to
-- pagewire serve (1 KB file) 17-26k req/s in the committed run
-- docs/perf-results/2026-11-26-pace, near the 20k req/s that
-- `pagewire load --rate 20000` is measured at. Each run's achieved rate is
-- whatever it is; the scripts then run `pagewire load --rate` at that
-- achieved rate (same connections, same server), so the two generators are
-- compared at the same rate.
--
-- Below saturation both pay what a closed loop at its maximum rate batches
-- away: the server goes idle between requests and every request wakes it
-- (on loopback the sender runs the receive path for the server's socket),
-- and the generator wakes for few responses at a time.

local n = 0

function delay()
   n = n + 1
   return 1 + n % 2
end
