-- +goose Up
-- The outbox of outbound webhooks: one row per change of a user's billing answer, written in
-- the transaction that made the change, then delivered to OUTBOUND_WEBHOOK_URL. The id orders
-- one user's events: a delivery waits while an earlier one of its user is pending.
create table outbound_deliveries (
    id              bigint generated always as identity primary key,
    message_id      text not null unique,
    user_id         text not null,
    event_type      text not null,
    -- The exact bytes that are signed and sent, on every attempt.
    payload         text not null,
    status          text not null check (status in ('pending', 'delivered', 'failed')),
    attempts        integer not null default 0,
    next_attempt_at timestamptz not null,
    -- Set while an instance is delivering it; a lease that ran out (a crash) frees it.
    lease_until     timestamptz,
    give_up_at      timestamptz not null,
    last_error      text,
    created_at      timestamptz not null,
    delivered_at    timestamptz
);
create index outbound_deliveries_pending on outbound_deliveries (user_id, id) where status = 'pending';
create index outbound_deliveries_due on outbound_deliveries (next_attempt_at) where status = 'pending';

-- +goose Down
drop table outbound_deliveries;
