-- +goose Up
-- One number, bumped by every plans sync: an instance keeps the plan catalogue in memory
-- while the version it read it at stands, and learns of a new one with the first statement
-- of each event's transaction.
create table plans_version (version bigint not null);
insert into plans_version (version) values (1);

-- +goose Down
drop table plans_version;
