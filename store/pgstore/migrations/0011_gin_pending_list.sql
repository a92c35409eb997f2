-- Version 11: the search index's pending list bounded to 256 kB (the
-- server's default is 4 MB). A GIN index with fastupdate gathers new
-- entries in a pending list and merges them into the index when the list
-- passes its limit, inside whichever statement's insert passed it: at
-- 4 MB that statement, a commit, ran for up to 0.8-1.4 s in the load
-- script's PostgreSQL rows (gin_clean_pending_list in the server's log),
-- and every commit queued behind it. A sixteenth of the list is merged
-- in about a sixteenth of the time, as often more; fastupdate off would
-- merge each message's terms into the index at its own insert.
ALTER INDEX recall_messages_search SET (gin_pending_list_limit = 256);
