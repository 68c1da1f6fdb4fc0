//! Calibration aid for the web stand-in: generate with the given parameters and print the
//! realised statistics (J-T1-like counts) and the retrieval diagnostics (identity ranking,
//! latent-concept oracle, chance) on the test part.
//!
//! `cargo run --release -p dyad-datasets --example web_calibrate -- 'images = 100000' 'concept_share = 0.3'`
//!
//! Each argument is one TOML `key = value` line of [`WebStandin`]'s parameters.

use dyad_datasets::web::{WebStandin, retrieval_diagnostics};

fn main() {
    let text = std::env::args().skip(1).collect::<Vec<_>>().join("\n");
    let config: WebStandin = match toml::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bad parameters: {e}");
            std::process::exit(2);
        }
    };
    let start = std::time::Instant::now();
    let data = config.generate().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let s = &data.stats;
    println!(
        "{} images ({} train / {} test) in {:.2} s; concepts {} (topics {}), queries {} ({} train / {} test, {} single-image)",
        s.images,
        s.train_images,
        s.test_images,
        start.elapsed().as_secs_f64(),
        s.concepts,
        s.topics,
        s.queries,
        s.train_queries,
        s.test_queries,
        s.single_image_queries
    );
    println!(
        "train queries / train images {:.2} % (paper 6.1 %), test queries / test images {:.2} % (paper 10.4 %); mean nnz {:.1}; mean images per query {:.1} (max {})",
        100.0 * s.train_queries as f64 / s.train_images.max(1) as f64,
        100.0 * s.test_queries as f64 / s.test_images.max(1) as f64,
        s.mean_nnz,
        s.mean_images_per_query,
        s.max_images_per_query
    );
    let d = retrieval_diagnostics(&data, 10, 2000);
    println!(
        "test retrieval over {} queries: identity precision@1 {:.2} %, @10 {:.2} %; concept oracle @1 {:.2} %; chance {:.2} %",
        d.queries,
        100.0 * d.dot_precision[0],
        100.0 * d.dot_precision[9],
        100.0 * d.oracle_precision_at_1,
        100.0 * d.chance
    );
}
