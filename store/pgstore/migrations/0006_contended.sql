-- Version 6: a conversation is contended until contended_until (Unix
-- nanoseconds, the replicas' clock), set by a replica whose commit found
-- that another replica committed on it since its plan. While it lasts,
-- exchanges on the conversation take its lease; the head read reports it.
-- Adding a column with a constant default rewrites no rows.
ALTER TABLE recall_conversations ADD COLUMN contended_until bigint NOT NULL DEFAULT 0;
