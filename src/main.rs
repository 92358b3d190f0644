use clap::Parser;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DUCKMV_LOG")
                .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"))
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    let config = duckmv::config::Config::parse();
    if let Err(e) = duckmv::server::run(config).await {
        eprintln!("duckmv: {e:#}");
        std::process::exit(1);
    }
}
