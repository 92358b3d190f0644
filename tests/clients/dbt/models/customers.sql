{{ config(materialized='table') }}
select id, name, segment from {{ ref('raw_customers') }}
