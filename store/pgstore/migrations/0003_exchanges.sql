-- Version 3: the inspector's exchange records (history.ExchangeRecord, as
-- JSON), the newest 200 of each conversation. A record refers to
-- messages by sequence number and holds none of their text. Delete
-- removes them with the conversation, in its transaction.
CREATE TABLE recall_exchanges (
    tenant       text  COLLATE "C" NOT NULL,
    conversation text  COLLATE "C" NOT NULL,
    id           text  COLLATE "C" NOT NULL, -- xch_<16 hex digits>: sorts in the order records were made
    body         bytea NOT NULL,
    PRIMARY KEY (tenant, conversation, id)
);
