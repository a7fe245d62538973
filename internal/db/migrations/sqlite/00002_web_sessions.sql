-- +goose Up
create table web_sessions (
    token  text primary key,
    data   blob not null,
    expiry timestamp not null
);
create index web_sessions_expiry on web_sessions (expiry);

-- +goose Down
drop table web_sessions;
