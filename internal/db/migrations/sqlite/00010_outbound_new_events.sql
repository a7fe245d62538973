-- +goose Up
-- Ingestion records an outbound event here, in its own transaction, and a deliverer
-- attempts it from here: only its first attempt's outcome takes it into
-- outbound_deliveries, delivered (outside both partial indexes) or to be retried. The row
-- ingestion writes so touches no secondary index, each of which is a page written to the
-- WAL at every commit, and a delivery that succeeds at once is written into
-- outbound_deliveries once, never rewritten (docs/outbound.md). The table holds only
-- events not yet attempted, or in their first attempt. An event keeps its id when it
-- moves; a new id is above those of both tables (InsertOutboundEventNumbered), so ids stay
-- unique across both and keep the recording order.
create table outbound_new_events (
    id          integer primary key,
    message_id  text not null,
    user_id     text not null,
    event_type  text not null,
    payload     text not null,
    created_at  timestamp not null,
    give_up_at  timestamp not null,
    -- Set while an instance makes the first attempt; a lease that ran out (a crash) frees it.
    lease_until timestamp
);

-- +goose Down
insert into outbound_deliveries (id, message_id, user_id, event_type, payload, status, next_attempt_at, give_up_at, created_at)
select id, message_id, user_id, event_type, payload, 'pending', created_at, give_up_at, created_at from outbound_new_events order by id;
drop table outbound_new_events;
