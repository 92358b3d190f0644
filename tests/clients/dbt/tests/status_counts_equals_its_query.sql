-- The materialized view holds exactly what its query returns now (bag equality, both ways).
with q as (
    select status, count(*) as n, sum(amount) as amount from {{ ref('raw_orders') }} group by status
)
(select * from {{ ref('status_counts') }} except all select * from q)
union all
(select * from q except all select * from {{ ref('status_counts') }})
