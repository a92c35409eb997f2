-- Version 2: the conversation's incarnation (history.Meta.Incarnation)
-- beside its version, so that a replica's window cache tells a
-- conversation deleted and made again under the same id, at the same
-- version, from the one it holds (history.Head). Rows written before it
-- read 0, as their metadata records do.
ALTER TABLE recall_conversations ADD COLUMN incarnation bigint NOT NULL DEFAULT 0;
