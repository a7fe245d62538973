-- +goose Up
-- The console's record of operators' actions grows into the audit log of every action that
-- changes billing state by hand, whoever takes it: an operator (their e-mail), a command
-- (cli:<OS user>), a service key (its name). Its rows are kept; tollgate never updates or
-- deletes one. user_id is the user the action concerns, where known.
alter table console_audit rename to audit_log;
alter table audit_log rename column operator to actor;
alter table audit_log add column user_id text;
create index audit_log_created on audit_log (created_at);
create index audit_log_user on audit_log (user_id, created_at);

-- +goose Down
drop index audit_log_user;
drop index audit_log_created;
alter table audit_log drop column user_id;
alter table audit_log rename column actor to operator;
alter table audit_log rename to console_audit;
