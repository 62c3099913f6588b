-- Every heartbeat updates its device row (last_seen_at, rate-limit window). Leaving 30 % of each
-- page free lets PostgreSQL keep those updates HOT (no index entries, including the trigram search
-- index), which is most of what a heartbeat costs the database.
ALTER TABLE "devices" SET (fillfactor = 70);
