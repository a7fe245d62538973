-- +goose Up
-- The console's customers seen last walk these by time (RecentCustomers), and its search
-- by a store's customer id looks that id up (UsersByProviderID): with a million users both
-- were scans. known_users is written at most once a session; billing_customers.updated_at
-- only when a customer is made or linked, so ingestion adds an entry per new customer.
create index known_users_last_seen on known_users (last_seen desc, user_id);
create index billing_customers_updated on billing_customers (updated_at desc, user_id);
create index provider_subscriptions_customer on provider_subscriptions (provider, provider_customer_id);

-- +goose Down
drop index provider_subscriptions_customer;
drop index billing_customers_updated;
drop index known_users_last_seen;
