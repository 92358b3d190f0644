-- The incremental model holds every source row of its window (ids from 5 on: the model reloads
-- the last three ids on every run) exactly once; older rows are the model's to keep as they were.
(select id, customer_id, amount, status, ordered_at from {{ ref('orders_incremental') }} where id >= 5
 except all select id, customer_id, amount, status, ordered_at from {{ ref('raw_orders') }} where id >= 5)
union all
(select id, customer_id, amount, status, ordered_at from {{ ref('raw_orders') }} where id >= 5
 except all select id, customer_id, amount, status, ordered_at from {{ ref('orders_incremental') }} where id >= 5)
