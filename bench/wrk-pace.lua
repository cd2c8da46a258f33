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
-- milliseconds and they fire about 1 ms late, so a delay of 1 ms is about a
-- 2 ms cycle and 2 ms about 3 ms. With 50 connections to pagewire serve (1 KB
-- file) on two cores, 1 ms alone runs well above 20k req/s and 2 ms alone
-- below it; alternating the two lands in between, near the 20k req/s that
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
