//! `duckmv-bench`: the project's benchmark (issue 6). Loads TPC-H-shaped data into a duckmv
//! server over the wire, creates the benchmark's materialized views, and times incremental
//! refresh against full recomputation for several change sizes; also the fixed cost of a refresh,
//! the cost of delta capture and the streaming rate. Writes JSON, an SVG and a markdown table.
//!
//! The modules live in `src/bench/` so the library crate stays free of benchmark code.

#[path = "../bench/mod.rs"]
mod bench;

use clap::Parser;

#[tokio::main]
async fn main() {
    let args = bench::cli::Args::parse();
    let outcome = if args.seed_joins {
        bench::seed::main(args).await
    } else {
        bench::run::main(args).await
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
