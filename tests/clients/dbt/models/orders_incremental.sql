{{ config(materialized='incremental', unique_key='id', incremental_strategy='delete+insert') }}
select id, customer_id, amount, status, ordered_at
from {{ ref('raw_orders') }}
{% if is_incremental() %}
where id >= (select coalesce(max(id), 0) - 2 from {{ this }})
{% endif %}
