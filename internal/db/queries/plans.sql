-- name: ListPlans :many
select id, key, name, tier, is_default, archived_at from plans order by tier, key;

-- name: InsertPlan :one
insert into plans (key, name, tier, is_default, created_at, updated_at)
values (sqlc.arg(key), sqlc.arg(name), sqlc.arg(tier), sqlc.arg(is_default), sqlc.arg(now), sqlc.arg(now))
returning id;

-- name: UpdatePlan :exec
update plans set name = sqlc.arg(name), tier = sqlc.arg(tier), is_default = sqlc.arg(is_default), archived_at = null, updated_at = sqlc.arg(now)
where id = sqlc.arg(id);

-- name: ArchivePlan :exec
update plans set archived_at = sqlc.arg(now), is_default = false, updated_at = sqlc.arg(now) where id = sqlc.arg(id);

-- name: UpsertEntitlement :one
insert into entitlements (name, created_at) values (sqlc.arg(name), sqlc.arg(now))
on conflict (name) do update set name = excluded.name
returning id;

-- name: ListAllPlanEntitlements :many
select pe.plan_id, e.name, pe.value from plan_entitlements pe join entitlements e on e.id = pe.entitlement_id
order by pe.plan_id, e.name;

-- name: PlanCatalogue :many
-- Every plan with its entitlements, one row per entitlement (one row with a null name for a
-- plan without any). Numeric entitlements are limits: they come with their usage_limits row.
-- A few plans of a few entitlements each: one read answers any user's position.
select p.id, p.key, p.name, p.tier, p.is_default, p.archived_at, e.name as entitlement, pe.value, ul.limit_value
from plans p
left join plan_entitlements pe on pe.plan_id = p.id
left join entitlements e on e.id = pe.entitlement_id
left join usage_limits ul on ul.plan_id = pe.plan_id and ul.entitlement_id = pe.entitlement_id
order by p.id, e.name;

-- name: DeletePlanEntitlements :exec
delete from plan_entitlements where plan_id = sqlc.arg(plan_id);

-- name: InsertPlanEntitlement :exec
insert into plan_entitlements (plan_id, entitlement_id, value) values (sqlc.arg(plan_id), sqlc.arg(entitlement_id), sqlc.arg(value));

-- name: DeleteUsageLimits :exec
delete from usage_limits where plan_id = sqlc.arg(plan_id);

-- name: InsertUsageLimit :exec
insert into usage_limits (plan_id, entitlement_id, limit_value) values (sqlc.arg(plan_id), sqlc.arg(entitlement_id), sqlc.arg(limit_value));

-- name: ListPlanPrices :many
select pp.provider, pp.price_id, pp.plan_id, pp.position, pp.lasts_seconds from plan_prices pp order by pp.provider, pp.price_id;

-- name: UpsertPlanPrice :exec
insert into plan_prices (provider, price_id, plan_id, position, lasts_seconds, created_at)
values (sqlc.arg(provider), sqlc.arg(price_id), sqlc.arg(plan_id), sqlc.arg(position), sqlc.narg(lasts_seconds), sqlc.arg(now))
on conflict (provider, price_id) do update set plan_id = excluded.plan_id, position = excluded.position, lasts_seconds = excluded.lasts_seconds;

-- name: PlanWebPrices :many
-- A live plan's web prices in the plans file's order.
select p.id as plan_id, p.name as plan_name, p.tier, pp.price_id
from plans p
left join plan_prices pp on pp.plan_id = p.id and pp.provider = 'web'
where p.key = sqlc.arg(key) and p.archived_at is null
order by pp.position, pp.price_id;

-- name: DeletePlanPrice :exec
delete from plan_prices where provider = sqlc.arg(provider) and price_id = sqlc.arg(price_id);

-- name: PlansSoldOnWeb :many
-- Live plans with at least one web price, lowest tier first: what the account page offers.
select p.id, p.key, p.name, p.tier from plans p
where p.archived_at is null
  and exists (select 1 from plan_prices pp where pp.plan_id = p.id and pp.provider = 'web')
order by p.tier;

-- name: BumpPlansVersion :exec
update plans_version set version = version + 1;
