//! The figures and the HTML report checked as a reader would see them: a small experiment
//! end to end in a temporary directory, then
//! (a) the PNGs at print resolution, the legend clear of every plot area and data point,
//!     no two texts overlapping, log-axis ticks at decades with labels apart;
//! (b) `index.html` rendered by headless Chromium (when installed): the screenshot shows the
//!     page and its figures, and the HTML has `<code>` and no literal backticks.
//!
//! Without Chromium, (b) prints "SKIPPED: chromium not found"; with `DYAD_REQUIRE_BROWSER=1`
//! (CI, after installing it) a missing Chromium fails the test.

use dyad_harness::Workspace;
use dyad_harness::analysis::results::ExperimentResults;
use dyad_harness::engine::plan::Plan;
use dyad_harness::engine::run::{Progress, RunOptions, execute};
use dyad_harness::presentation::layout::{Label, Layout, Rect};
use dyad_harness::presentation::plots;
use dyad_harness::presentation::png::PNG_SCALE;
use dyad_harness::presentation::report::{Block, report_dir, to_html, to_markdown};
use dyad_harness::spec::profile::Profile;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SPEC: &str = r#"
title = "render check"
paper = "demo"
figure = "Fig. R"
description = "A small run whose `report` is checked as a reader would see it."

[[datasets]]
id = "small"
name = "caltech256-standin"
params = { classes = 4, per_class = 12, dim = 120, seed = 5 }

[[datasets]]
id = "other"
name = "caltech256-standin"
params = { classes = 5, per_class = 12, dim = 120, seed = 9 }

[protocol]
repeats = 2
seed = 7
checkpoints = { max = 100000, log_points = 7 }

[protocol.retrieval]
train_per_class = 7
test_per_class = 4
evaluate = ["train", "test"]
k_max = 5

[[solvers]]
name = "oasis"
params = { c = 0.1 }

[[solvers]]
name = "euclidean"

[[plots]]
id = "map"
title = "mean average precision against training steps, train (dashed) and test sets of both data sets"
x = "step"
metric = "map"
x_label = "training steps"
y_label = "mean average precision"

[[plots]]
id = "map-log"
title = "mAP against steps (log)"
x = "step"
metric = "map"
sets = ["test"]
x_label = "training steps (log scale)"
y_label = "mAP"
log_x = true

[[plots]]
id = "prec"
title = "precision at k"
x = "k"
metric = "precision"
sets = ["test"]
x_label = "k"
y_label = "precision"
chance = true

[[claims]]
id = "c1"
text = "OASIS beats the `euclidean` baseline"
quote = "OASIS achieved consistently superior results throughout the full range of k"
section = "NIPS §4.2, Fig. 2"
kind = "greater"
metric = "map"
solver = "oasis"
versus = "euclidean"
"#;

struct Run {
    dir: tempfile::TempDir,
    ws: Workspace,
    plans: Vec<Plan>,
}

fn run() -> Run {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("experiments").join("demo");
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::write(exp.join("render.toml"), SPEC).unwrap();
    let ws = Workspace {
        experiments: dir.path().join("experiments"),
        results: dir.path().join("results"),
        data_dir: dir.path().join("no-data"),
    };
    let ctx = ws.data_context();
    let plans = ws
        .plan(&ws.select_specs(&[]).unwrap(), Profile::Quick, &ctx)
        .unwrap();
    let summary = execute(
        &plans,
        &RunOptions {
            results: ws.results.clone(),
            keep_going: false,
            threads: Some(2),
            progress: Progress::Quiet,
            recompute: Default::default(),
        },
    );
    assert!(
        summary.failed.is_empty(),
        "{} cells failed",
        summary.failed.len()
    );
    Run { dir, ws, plans }
}

fn png(path: &Path) -> image::RgbImage {
    image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgb8()
}

/// A PNG's bytes without its text chunks (`tEXt`): the same image, no render stamp.
fn png_without_text(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes[..8].to_vec();
    let mut at = 8;
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let end = at + 12 + len;
        if &bytes[at + 4..at + 8] != b"tEXt" {
            out.extend_from_slice(&bytes[at..end]);
        }
        at = end;
    }
    assert!(out.len() < bytes.len(), "the PNG had no text chunk");
    out
}

/// Pixels within `tol` of `c` in each channel.
fn count_near(img: &image::RgbImage, c: [u8; 3], tol: u8) -> usize {
    img.pixels()
        .filter(|p| (0..3).all(|i| p.0[i].abs_diff(c[i]) <= tol))
        .count()
}

fn check_layout(name: &str, lay: &Layout) {
    let fig = Rect {
        x0: 0.0,
        y0: 0.0,
        x1: lay.width,
        y1: lay.height,
    };
    // Every text inside the figure, and no two texts overlapping.
    let labels: Vec<&Label> = lay.labels();
    for l in &labels {
        assert!(
            fig.encloses(&l.rect()),
            "{name}: {:?} leaves the figure",
            l.text
        );
    }
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            assert!(
                !a.rect().intersects(&b.rect()),
                "{name}: {:?} overlaps {:?}",
                a.text,
                b.text
            );
        }
    }
    // The legend is clear of every plot area and every point drawn.
    let legend = lay.legend.as_ref().expect("a legend");
    assert!(
        fig.encloses(&legend.frame),
        "{name}: legend leaves the figure"
    );
    for p in &lay.panels {
        assert!(
            !legend.frame.intersects(&p.plot),
            "{name}: legend over a plot area"
        );
        assert!(!p.points.is_empty(), "{name}: a panel without points");
        for &q in &p.points {
            assert!(!legend.frame.contains(q), "{name}: legend covers {q:?}");
            // Every point inside its plot area, none on the right or top edge.
            assert!(
                p.plot.contains(q),
                "{name}: point {q:?} outside {:?}",
                p.plot
            );
            assert!(
                q.0 < p.plot.x1 - 1.0,
                "{name}: point {q:?} on the right edge"
            );
            assert!(q.1 > p.plot.y0 + 1.0, "{name}: point {q:?} on the top edge");
        }
        for l in p.caption.iter().chain(&p.x_ticks).chain(&p.y_ticks) {
            assert!(
                !l.rect().intersects(&p.plot),
                "{name}: {:?} in the plot",
                l.text
            );
            assert!(
                !l.rect().intersects(&legend.frame),
                "{name}: {:?} in the legend",
                l.text
            );
        }
        assert!(
            p.x_ticks.len() >= 2 && p.y_ticks.len() >= 2,
            "{name}: too few ticks"
        );
        // The data fill the y axis: it is not stretched to 0 for values far from 0.
        let ys: Vec<f64> = p.points.iter().map(|q| q.1).collect();
        let used = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            - ys.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            used >= 0.5 * p.plot.height(),
            "{name}: data use only {used:.0} of {:.0} px",
            p.plot.height()
        );
    }
}

#[test]
fn figures_and_report_read_well() {
    let r = run();
    let dir = report_dir(&r.ws.results, Profile::Quick);
    let [html_path, md_path] = r.ws.report(&r.plans, Profile::Quick).unwrap();
    let res = ExperimentResults::load(&r.plans[0], &r.ws.cache());
    assert!(res.complete());

    // (a) Figures, from the layout plots.rs draws.
    for plot in &r.plans[0].spec.spec.plots {
        let lay = plots::layout(&res, plot);
        let name = plot.id.as_str();
        check_layout(name, &lay);
        let stem = dir.join("figures").join(format!("demo-render-{name}"));
        let img = png(&stem.with_extension("png"));
        assert_eq!(img.dimensions(), lay.png_size(), "{name}: PNG size");
        assert_eq!(lay.png_size().0, lay.size().0 * PNG_SCALE);
        assert!(img.width() >= 1400, "{name}: PNG {} px wide", img.width());
        let svg = std::fs::read_to_string(stem.with_extension("svg")).unwrap();
        assert!(
            svg.contains(&format!("width=\"{}\"", lay.size().0)),
            "{name}"
        );
        assert!(svg.contains("DejaVu Sans"), "{name}: SVG font");
        // The first solver's colour (OASIS, red) is drawn, and the text is dark grey.
        assert!(
            count_near(&img, [0xd6, 0x27, 0x28], 12) > 200,
            "{name}: no red series"
        );
        assert!(
            count_near(&img, [0x22, 0x22, 0x22], 6) > 200,
            "{name}: no text"
        );
        // The title is whole: every word of it is in the layout.
        let title: Vec<&str> = lay.title.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            title.join(" "),
            format!("Fig. R — {}", plot.title),
            "{name}: title cut"
        );
        if plot.log_x {
            for p in &lay.panels {
                assert!(p.x.log);
                let decades: Vec<f64> = p.x.ticks.iter().map(|t| t.log10()).collect();
                assert!(
                    decades.len() >= 3 && decades.iter().all(|d| (d - d.round()).abs() < 1e-9),
                    "{name}: log ticks {:?}",
                    p.x.ticks
                );
                let texts: Vec<&str> = p.x_ticks.iter().map(|l| l.text.as_str()).collect();
                assert!(
                    texts.contains(&"10K") && texts.contains(&"100K"),
                    "{texts:?}"
                );
                for w in p.x_ticks.windows(2) {
                    assert!(
                        w[1].rect().x0 - w[0].rect().x1 >= 4.0,
                        "{name}: {:?} and {:?} collide",
                        w[0].text,
                        w[1].text
                    );
                }
                assert!(!p.x.minor.is_empty(), "{name}: no minor ticks");
            }
        }
    }
    // The long title wraps rather than being cut.
    let long = plots::layout(&res, &r.plans[0].spec.spec.plots[0]);
    assert!(long.title.len() >= 2, "{:?}", long.title);
    // Deterministic bytes: the figure drawn again from scratch is the same file.
    let fig = dir.join("figures/demo-render-map.png");
    let svg = fig.with_extension("svg");
    let (before, before_svg) = (std::fs::read(&fig).unwrap(), std::fs::read(&svg).unwrap());
    std::fs::remove_file(&fig).unwrap();
    r.ws.outputs(&r.plans).unwrap();
    assert_eq!(
        before,
        std::fs::read(&fig).unwrap(),
        "figures are not deterministic"
    );
    // Nothing changed: the figure is not drawn again (the file is the same inode: written
    // files are renamed into place). A PNG without the stamp of the SVG about to be drawn, or
    // an SVG that differs, is drawn again, to the same bytes.
    use std::os::unix::fs::MetadataExt;
    let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
    let (png_inode, svg_inode) = (inode(&fig), inode(&svg));
    r.ws.outputs(&r.plans).unwrap();
    assert_eq!(
        (inode(&fig), inode(&svg)),
        (png_inode, svg_inode),
        "drawn again"
    );
    let pixels = png(&fig);
    for (spoil, what) in [
        (&fig, "a PNG without its stamp"),
        (&svg, "an SVG that differs"),
    ] {
        let mut bytes = std::fs::read(spoil).unwrap();
        if spoil == &fig {
            bytes = png_without_text(&bytes);
        } else {
            bytes.extend_from_slice(b"<!-- edited -->");
        }
        std::fs::write(spoil, &bytes).unwrap();
        assert_eq!(png(&fig), pixels, "{what}: spoiling changed the image");
        r.ws.outputs(&r.plans).unwrap();
        assert_eq!(before, std::fs::read(&fig).unwrap(), "{what}: PNG");
        assert_eq!(before_svg, std::fs::read(&svg).unwrap(), "{what}: SVG");
    }

    // The report's HTML: the overview on `index.html`, linking to the paper's page.
    let index = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        index.contains("<h2 id=\"overview\">Overview</h2>")
            && index.contains("<a href=\"demo.html#demo\">DEMO</a>")
            && index
                .contains("<a href=\"demo.html#demorender--fig-r-render-check\">demo/render</a>"),
        "{index}"
    );
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("| [DEMO](#demo) | [demo/render](#demorender--fig-r-render-check) | Fig. R | SYNTHETIC | complete |"),
        "{md}"
    );
    let html_path = dir.join(dyad_harness::presentation::report::paper_page("demo"));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("<h3 id=\"demorender--fig-r-render-check\">"),
        "the section's anchor"
    );
    assert!(!html.contains('`'), "literal backticks in the HTML");
    assert!(html.contains("<code>report</code>"), "code spans");
    assert!(
        html.contains("<code>euclidean</code>"),
        "code spans in claims"
    );
    assert!(html.contains("class=\"verdict "), "verdict badges");
    assert!(
        html.contains("<span class=\"tag\">shape check"),
        "stand-in verdicts tagged as shape checks"
    );
    assert!(
        html.contains(
            "<blockquote class=\"quote\">“OASIS achieved consistently superior results \
             throughout the full range of k” — NIPS §4.2, Fig. 2</blockquote>"
        ),
        "the paper's words under the verdict"
    );
    assert!(html.contains("<td class=\"num\">"), "numbers right-aligned");
    assert!(html.contains("max-width:100%"), "images scale to the page");
    assert!(md.contains("`report`") && md.contains("---:|"), "{md}");

    // (b) The page as Chromium renders it.
    let Some(chromium) = chromium() else {
        assert!(
            std::env::var("DYAD_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "DYAD_REQUIRE_BROWSER=1 but chromium was not found"
        );
        println!("SKIPPED: chromium not found (the browser half of this test did not run)");
        return;
    };
    let shot = r.dir.path().join("shot.png");
    screenshot(&chromium, &html_path, &shot, r.dir.path());
    let img = png(&shot);
    assert_eq!(img.dimensions(), (1200, 3000), "screenshot size");
    let white = count_near(&img, [255, 255, 255], 0);
    let total = (img.width() * img.height()) as usize;
    assert!(white < total * 98 / 100, "the screenshot is blank");
    // A figure is shown (its red series) and a verdict badge: green (holds), red (does not
    // hold) or amber (not distinguishable: two splits rarely separate the methods).
    assert!(
        count_near(&img, [0xd6, 0x27, 0x28], 20) > 100,
        "no figure on the page"
    );
    let badge: usize = [[0x1a, 0x7f, 0x37], [0xcf, 0x22, 0x2e], [0x9a, 0x67, 0x00]]
        .iter()
        .map(|c| count_near(&img, *c, 30))
        .sum();
    assert!(badge > 20, "no verdict badge");
}

/// Chromium: `DYAD_CHROMIUM`, else `/usr/bin/chromium` or `chromium` on the PATH.
fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("DYAD_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.exists());
    }
    let usual = PathBuf::from("/usr/bin/chromium");
    if usual.exists() {
        return Some(usual);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("chromium"))
            .find(|p| p.exists())
    })
}

fn screenshot(chromium: &Path, html: &Path, out: &Path, tmp: &Path) {
    let profile = tmp.join("chromium-profile");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", out.display()))
        .arg("--window-size=1200,3000")
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            assert!(
                status.success() && out.exists(),
                "chromium failed ({status}): {err}"
            );
            return;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The HTML rendering on its own: code spans, marks, numeric columns, escaping.
#[test]
fn html_rendering_of_code_marks_and_numbers() {
    let doc = vec![
        Block::Heading(1, "report — profile `quick`".into()),
        Block::Para("run `dyad reproduce a/b` & see <this>; a lone ` stays".into()),
        Block::Table {
            head: vec!["data".into(), "map (test)".into(), "steps".into()],
            rows: vec![
                vec!["c10".into(), "0.123 ± 0.004 (n=3)".into(), "400".into()],
                vec!["c20".into(), "—".into(), "1200".into()],
            ],
        },
        Block::List(vec![
            "✅ holds — OASIS beats `euclidean` [c1]: 0.3 > 0.2".into(),
            "❌ does not hold — x [c2]: y".into(),
            "➖ not comparable — z [c3]: w".into(),
            "✅ holds — q [c4]: d\n> “the paper's <words>” — JMLR §5".into(),
            "shape check on SYNTHETIC data: our diagnostic, not the paper's claim: 🟰 not \
             distinguishable — o [c5]: e"
                .into(),
        ]),
    ];
    let html = to_html(&doc);
    assert!(!html.contains('`'), "{html}");
    assert!(
        html.contains("<h1>report — profile <code>quick</code></h1>"),
        "{html}"
    );
    assert!(
        html.contains(
            "run <code>dyad reproduce a/b</code> &amp; see &lt;this&gt;; a lone &#96; stays"
        ),
        "{html}"
    );
    assert!(
        html.contains("<th>data</th><th class=\"num\">map (test)</th>"),
        "{html}"
    );
    assert!(html.contains("<td class=\"num\">—</td>"), "{html}");
    assert!(
        html.contains(
            "<span class=\"verdict holds\">✓ holds</span> OASIS beats <code>euclidean</code>"
        ),
        "{html}"
    );
    assert!(html.contains("<span class=\"verdict fails\">✗ does not hold</span>"));
    assert!(html.contains("<span class=\"verdict na\">– not comparable</span>"));
    assert!(!html.contains('✅') && !html.contains('❌') && !html.contains('➖'));
    let md = to_markdown(&doc);
    assert!(md.contains("|---|---:|---:|"), "{md}");
    assert!(md.contains("- ✅ holds — OASIS beats `euclidean`"), "{md}");
    // A claim's quotation: a block quote under its verdict, in both renderings.
    assert!(
        html.contains(
            "<li><span class=\"verdict holds\">✓ holds</span> q [c4]: d<blockquote \
             class=\"quote\">“the paper's &lt;words&gt;” — JMLR §5</blockquote></li>"
        ),
        "{html}"
    );
    assert!(
        md.contains("- ✅ holds — q [c4]: d\n  > “the paper's <words>” — JMLR §5\n"),
        "{md}"
    );
    // Our diagnostic on a stand-in: both tags before the badge.
    assert!(
        html.contains(
            "<span class=\"tag\">shape check · SYNTHETIC</span> <span class=\"tag \
             ours\">our diagnostic</span> <span class=\"verdict even\">= not \
             distinguishable</span> o [c5]: e"
        ),
        "{html}"
    );
    assert_eq!(dyad_harness::presentation::report::parse_markdown(&md), doc);
}
