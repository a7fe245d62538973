-- +goose Up
-- Ingestion records an outbound event here, in its own transaction; the deliverer moves the
-- recorded events into outbound_deliveries in batches, a transaction per batch. The row
-- ingestion writes so touches no secondary index: on outbound_deliveries, each insert also
-- went into two partial indexes, each a page written to the WAL at every commit. The table
-- holds only what is not yet moved. Its id keeps the recording order, which the move keeps;
-- once the table is empty an id may come again, which no order depends on.
create table outbound_new_events (
    id          integer primary key,
    message_id  text not null,
    user_id     text not null,
    event_type  text not null,
    payload     text not null,
    created_at  timestamp not null,
    give_up_at  timestamp not null
);

-- +goose Down
insert into outbound_deliveries (message_id, user_id, event_type, payload, status, next_attempt_at, give_up_at, created_at)
select message_id, user_id, event_type, payload, 'pending', created_at, give_up_at, created_at from outbound_new_events order by id;
drop table outbound_new_events;
