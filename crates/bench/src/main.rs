//! `duckmv-bench`: the project's benchmark (issue 6). Loads TPC-H-shaped data into a duckmv
//! server over the wire, creates the benchmark's materialized views, and times incremental
//! refresh against full recomputation for several change sizes; also the fixed cost of a refresh,
//! the cost of delta capture and the streaming rate. Writes JSON, an SVG and a markdown table.
//!
//! The benchmark's modules, one job each. `run` orchestrates; everything else is either pure
//! (SQL text, statistics, rendering) and unit-tested, or a thin measurement over a client.

mod backlog;
mod capture;
mod changes;
mod checkpoints;
mod cli;
mod data;
mod error;
mod measure;
mod policies;
mod report;
mod run;
mod seed;
mod server;
mod stats;
mod steady;
mod stream;
mod svg;
mod tpch_changes;
mod tpch_data;
mod tpch_queries;
mod tpch_report;
mod tpch_run;
mod views;

use clap::Parser;

#[tokio::main]
async fn main() {
    let args = cli::Args::parse();
    let outcome = if args.seed_joins {
        seed::main(args).await
    } else if args.checkpoints {
        checkpoints::main(args).await
    } else if args.capture {
        capture::main(args).await
    } else if args.policies {
        policies::main(args).await
    } else if args.tpch {
        tpch_run::main(args).await
    } else {
        run::main(args).await
    };
    match outcome {
        Ok(true) => {}
        Ok(false) => {
            eprintln!("duckmv-bench: FAILED: at least one view did not pass (see above)");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("duckmv-bench: {e}");
            std::process::exit(2);
        }
    }
}
