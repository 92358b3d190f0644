{{ config(materialized='materialized_view') }}
select status, count(*) as n, sum(amount) as amount
from {{ ref('raw_orders') }}
group by status
