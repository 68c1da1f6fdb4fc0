//! The plot kinds a spec's `[[plots]]` may name (`kind = "..."`; default `"curves"`, or
//! `"param"` with `x = "param"`). A new kind of figure is a file here declaring its
//! [`PlotKind`] entry (its name, the kind-specific keys it reads, its checks and how it builds
//! its panels from the results) and one line in [`PLOT_KINDS`]; drawing, layout, legends and
//! error bars are shared ([`super`]).

mod curves;
mod param;
mod scatter;

use super::Panel;
use crate::analysis::results::ExperimentResults;
use crate::spec::{ErrorBars, LoadedSpec, PlotSpec, Spec, SpecError};

/// What a plot kind is: its name, what it reads and checks, and how it builds its panels.
pub(crate) struct PlotKind {
    /// The spec's `kind` (e.g. `"scatter"`).
    pub name: &'static str,
    /// The keys only some kinds read ([`KIND_KEYS`]) which this one reads.
    pub reads: &'static [&'static str],
    /// Further checks of the plot against its spec: the key at fault and what is wrong.
    pub check: Check,
    /// The panels of the plot, from the experiment's results and the sets it draws.
    pub panels: Panels,
}

/// A kind's further checks of a plot: the key at fault and what is wrong with it.
pub(crate) type Check = fn(&Spec, &PlotSpec) -> Result<(), (&'static str, String)>;

/// How a kind builds a plot's panels.
pub(crate) type Panels =
    for<'p> fn(&ExperimentResults<'_>, &'p PlotSpec, &[String]) -> Vec<Panel<'p>>;

/// Every plot kind, by the name specs write.
pub(crate) static PLOT_KINDS: &[&PlotKind] = &[&curves::CURVES, &scatter::SCATTER, &param::PARAM];

/// Keys of a plot that only some kinds read: written for another kind, they are an error.
pub(crate) const KIND_KEYS: [&str; 6] = [
    "envelope",
    "relative_to",
    "versus",
    "x_param",
    "fit_power",
    "overlays",
];

/// Whether `plot` writes the kind-specific `key`.
fn written(plot: &PlotSpec, key: &str) -> bool {
    match key {
        "envelope" => plot.envelope,
        "relative_to" => plot.relative_to.is_some(),
        "versus" => plot.versus.is_some(),
        "x_param" => plot.x_param.is_some(),
        "fit_power" => plot.fit_power,
        "overlays" => !plot.overlays.is_empty(),
        _ => false,
    }
}

/// The registered plot kind named `name`.
pub(crate) fn kind(name: &str) -> Option<&'static PlotKind> {
    PLOT_KINDS.iter().copied().find(|k| k.name == name)
}

/// The kind of `plot` (`None` for an unknown name, which [`validate`] refuses).
pub(crate) fn of(plot: &PlotSpec) -> Option<&'static PlotKind> {
    kind(plot.kind_name())
}

/// The part of a spec's validation that the plot kinds own: every plot names a registered
/// kind, writes no key only other kinds read, and passes its kind's checks. Errors are at the
/// plot's key, as the spec's own. Run with the spec's validation, when specs are selected
/// ([`crate::Workspace::select_specs`]).
pub fn validate(spec: &LoadedSpec) -> Result<(), SpecError> {
    for (i, p) in spec.spec.plots.iter().enumerate() {
        let at = |key: &str, msg: String| {
            spec.error_at_key(
                &["plots", &i.to_string(), key],
                format!("plot `{}`: {msg}", p.id),
            )
        };
        let Some(k) = of(p) else {
            let known: Vec<&str> = PLOT_KINDS.iter().map(|k| k.name).collect();
            return Err(at(
                "kind",
                format!(
                    "unknown kind \"{}\" (known: {})",
                    p.kind_name(),
                    known.join(", ")
                ),
            ));
        };
        if let Some(key) = KIND_KEYS
            .into_iter()
            .find(|key| written(p, key) && !k.reads.contains(key))
        {
            let readers: Vec<String> = PLOT_KINDS
                .iter()
                .filter(|k| k.reads.contains(&key))
                .map(|k| format!("`kind = \"{}\"`", k.name))
                .collect();
            return Err(at(
                key,
                format!(
                    "`{key}` goes with {} (this plot is kind \"{}\")",
                    readers.join(" or "),
                    k.name
                ),
            ));
        }
        if p.error_bars == ErrorBars::SdMethod && p.relative_to.is_none() {
            return Err(at(
                "error_bars",
                "`error_bars = \"sd-method\"` goes with `relative_to` (the solver's own \
                 spread beside its difference to the reference)"
                    .into(),
            ));
        }
        (k.check)(&spec.spec, p).map_err(|(key, msg)| at(key, msg))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::tests::MINIMAL;

    /// A spec parsed and its plots' kinds checked, as `Workspace::select_specs` does.
    fn parse(src: &str) -> Result<LoadedSpec, SpecError> {
        let s = LoadedSpec::parse(std::path::Path::new("experiments/demo/f.toml"), src.into())?;
        validate(&s).map(|()| s)
    }

    fn plot(x: &str, extra: &str) -> String {
        format!(
            "{MINIMAL}\n[[plots]]\nid = \"p\"\ntitle = \"p\"\nx = \"{x}\"\nmetric = \"map\"\n\
             x_label = \"x\"\ny_label = \"y\"\n{extra}\n"
        )
    }

    fn line_of(src: &str, key: &str) -> usize {
        src.lines().position(|l| l.starts_with(key)).unwrap() + 1
    }

    #[test]
    fn kind_names_are_unique_and_every_kind_key_has_a_reader() {
        let mut names = std::collections::BTreeSet::new();
        for k in PLOT_KINDS {
            assert!(names.insert(k.name), "two plot kinds named {}", k.name);
            assert!(k.reads.iter().all(|r| KIND_KEYS.contains(r)), "{}", k.name);
        }
        for key in KIND_KEYS {
            assert!(PLOT_KINDS.iter().any(|k| k.reads.contains(&key)), "{key}");
        }
    }

    #[test]
    fn the_kind_defaults_from_the_x_axis_and_unknown_kinds_name_the_known_ones() {
        let s = parse(&plot("step", "")).unwrap();
        assert_eq!(of(&s.spec.plots[0]).unwrap().name, "curves");
        let s = parse(&plot("param", "x_param = \"classes\"")).unwrap();
        assert_eq!(of(&s.spec.plots[0]).unwrap().name, "param");
        let src = plot("step", "kind = \"pie\"");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of(&src, "kind")), "{e}");
        assert!(
            e.to_string().contains("known: curves, scatter, param"),
            "{e}"
        );
    }

    #[test]
    fn a_key_of_another_kind_is_refused_at_its_line() {
        let src = plot("step", "fit_power = true");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of(&src, "fit_power")), "{e}");
        assert!(
            e.to_string().contains("goes with `kind = \"param\"`"),
            "{e}"
        );
        let src = plot("param", "x_param = \"classes\"\nenvelope = true");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of(&src, "envelope")), "{e}");
        assert!(e.to_string().contains("`kind = \"curves\"`"), "{e}");
        // `x = "param"` without its parameter, and the parameter without `x = "param"`.
        let e = parse(&plot("param", "")).unwrap_err();
        assert!(e.to_string().contains("goes with `x_param`"), "{e}");
        let e = parse(&plot("step", "x_param = \"classes\"")).unwrap_err();
        assert!(e.to_string().contains("`x_param` goes with"), "{e}");
        let e = parse(&plot("param", "kind = \"curves\"\nx_param = \"c\"")).unwrap_err();
        assert!(e.to_string().contains("`x_param` goes with"), "{e}");
    }

    #[test]
    fn an_envelope_needs_a_step_or_seconds_axis() {
        assert!(parse(&plot("seconds", "envelope = true")).is_ok());
        assert!(parse(&plot("step", "envelope = true")).is_ok());
        let src = plot("k", "envelope = true");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of(&src, "envelope")), "{e}");
        assert!(e.to_string().contains("`envelope` needs"), "{e}");
    }

    #[test]
    fn a_difference_plot_names_a_solver_and_pairs_by_step_k_or_coordinate() {
        let rel = |x: &str, to: &str| plot(x, &format!("relative_to = \"{to}\""));
        assert!(parse(&rel("step", "oasis")).is_ok());
        assert!(parse(&rel("k", "oasis")).is_ok());
        for (x, to) in [("step", "lego"), ("seconds", "oasis")] {
            let e = parse(&rel(x, to)).unwrap_err().to_string();
            assert!(e.contains("`relative_to` names a solver"), "{x} {to}: {e}");
        }
        let src = plot("step", "error_bars = \"sd-method\"");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of(&src, "error_bars")), "{e}");
    }

    #[test]
    fn a_scatter_needs_a_solver_to_pair_with_and_a_coordinate_axis() {
        let src = plot("category", "kind = \"scatter\"");
        let e = parse(&src).unwrap_err();
        assert!(e.to_string().contains("needs `versus`"), "{e}");
        assert!(parse(&plot("category", "kind = \"scatter\"\nversus = \"oasis\"")).is_ok());
        let src = plot("step", "kind = \"scatter\"\nversus = \"oasis\"");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of(&src, "x =")), "{e}");
        let e = parse(&plot("category", "versus = \"oasis\"")).unwrap_err();
        assert!(e.to_string().contains("`kind = \"scatter\"`"), "{e}");
    }
}
