-- +goose Up
-- A web event that moves a subscription to another customer names the user it moved from,
-- so that the console shows it on that user's timeline as well as on the new one's.
alter table provider_events add column moved_from_user_id text;
create index provider_events_moved_from on provider_events (moved_from_user_id) where moved_from_user_id is not null;

-- +goose Down
drop index provider_events_moved_from;
alter table provider_events drop column moved_from_user_id;
