{{ config(materialized='view') }}
select id, customer_id, amount, status, ordered_at
from {{ ref('raw_orders') }}
where status <> 'cancelled'
