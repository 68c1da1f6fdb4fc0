//! 20 Newsgroups, bydate tarball to tf-idf matrix over 1,000 information-gain features (LORETA
//! spec §5.1 defaults), end to end and by stage: reading and decoding the tarball (gzip + tar),
//! tokenisation into bags of words, and fitting + transforming. Reads
//! `$DYAD_DATA_DIR/20newsgroups/20news-bydate.tar.gz`; without `DYAD_DATA_DIR` it prints a
//! note and measures nothing.

use criterion::{Criterion, criterion_group, criterion_main};
use dyad_datasets::newsgroups::NewsCorpus;
use dyad_datasets::pipelines::text::TextPipeline;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let Some(root) = std::env::var_os("DYAD_DATA_DIR") else {
        eprintln!("DYAD_DATA_DIR is not set: 20 Newsgroups benchmark skipped");
        return;
    };
    let dir = PathBuf::from(root).join("20newsgroups");
    let corpus = NewsCorpus::load(&dir)
        .unwrap_or_else(|e| panic!("DYAD_DATA_DIR is set but 20 Newsgroups is not usable: {e}"));
    let pipeline = TextPipeline::default();
    let bow = pipeline.bag_of_words(&corpus).unwrap();
    let train = bow.official_train_rows().unwrap();

    let mut g = c.benchmark_group("20newsgroups");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("tarball_to_tfidf_1000_ig", |b| {
        b.iter(|| {
            let corpus = NewsCorpus::load(&dir).unwrap();
            black_box(pipeline.run(&corpus).unwrap())
        })
    });
    g.bench_function("read_tarball", |b| {
        b.iter(|| black_box(NewsCorpus::load(&dir).unwrap()))
    });
    g.bench_function("tokenise_bag_of_words", |b| {
        b.iter(|| black_box(pipeline.bag_of_words(&corpus).unwrap()))
    });
    g.bench_function("fit_and_transform", |b| {
        b.iter(|| {
            let f = pipeline.fit(&bow, &train).unwrap();
            black_box(f.transform(&bow).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
