{{ config(materialized='materialized_view') }}
select c.id as customer_id, c.segment, count(o.id) as orders, sum(o.amount) as total
from {{ ref('raw_customers') }} c
left join {{ ref('raw_orders') }} o on o.customer_id = c.id and o.status <> 'cancelled'
group by c.id, c.segment
