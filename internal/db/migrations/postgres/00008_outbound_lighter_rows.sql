-- +goose Up
-- Every change writes an outbox row in ingestion's transaction, so each index on it is paid
-- for by ingestion. A message id is 128 random bits, unique by construction; no query looks
-- one up, so its unique index went unused but on every insert and delivery.
alter table outbound_deliveries drop constraint if exists outbound_deliveries_message_id_key;

-- +goose Down
alter table outbound_deliveries add constraint outbound_deliveries_message_id_key unique (message_id);
