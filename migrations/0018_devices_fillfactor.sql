-- Every heartbeat rewrites its device row (last_seen_at, the rate-limit window). That update is HOT
-- (heap-only: no index touched, the GIN search index included) only when the row's page has room
-- for the new version; on full pages it is not, and writes every index of the table. Leaving 30 %
-- of each page free keeps nearly every heartbeat's update HOT. Existing pages keep their old fill
-- until rewritten (VACUUM FULL or pg_repack), new and updated rows use the new setting.
ALTER TABLE "devices" SET (fillfactor = 70);
