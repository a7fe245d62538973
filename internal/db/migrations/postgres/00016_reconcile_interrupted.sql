-- +goose Up
-- A pass stopped by shutdown or a signal is recorded as interrupted, not finished: the
-- schedule does not count it, and the next pass resumes where it stopped.
alter table reconcile_runs add column interrupted boolean not null default false;

-- +goose Down
alter table reconcile_runs drop column interrupted;
