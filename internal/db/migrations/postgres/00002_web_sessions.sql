-- +goose Up
-- Server-side browser sessions (scs store): the cookie holds only the random token.
create table web_sessions (
    token  text primary key,
    data   bytea not null,
    expiry timestamptz not null
);
create index web_sessions_expiry on web_sessions (expiry);

-- +goose Down
drop table web_sessions;
