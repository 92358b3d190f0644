//! Refresh time against change size, incremental vs full, one panel per view, log–log axes.
//! Hand-written SVG: a few lines and circles do not need a plotting crate.

use crate::report::{percent, Results};

const PANEL_W: f64 = 320.0;
const PANEL_H: f64 = 230.0;
/// Inside a panel: room for the title, the axis labels and the tick labels.
const LEFT: f64 = 58.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 38.0;
const COLS: usize = 4;
const HEADER: f64 = 50.0;

const INCREMENTAL: &str = "#1f77b4";
const FULL: &str = "#d62728";

/// A log10 axis spanning whole decades around the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogAxis {
    pub lo_exp: i32,
    pub hi_exp: i32,
}

impl LogAxis {
    pub fn around(values: impl IntoIterator<Item = f64>) -> Option<LogAxis> {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            return None;
        }
        let lo_exp = lo.log10().floor() as i32;
        let mut hi_exp = hi.log10().ceil() as i32;
        if hi_exp <= lo_exp {
            hi_exp = lo_exp + 1;
        }
        Some(LogAxis { lo_exp, hi_exp })
    }

    /// Position of `v` in [0, 1] along the axis.
    pub fn unit(&self, v: f64) -> f64 {
        (v.log10() - self.lo_exp as f64) / (self.hi_exp - self.lo_exp) as f64
    }

    pub fn decades(&self) -> impl Iterator<Item = f64> {
        // Parsed, not computed: `1e-1` is the double nearest 0.1, `10f64.powi(-1)` need not be.
        (self.lo_exp..=self.hi_exp).map(|e| format!("1e{e}").parse().unwrap())
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn ms_label(v: f64) -> String {
    if v >= 1000.0 {
        format!("{}s", v / 1000.0)
    } else {
        format!("{v}ms")
    }
}

/// One series: (x, y, oracle failed) points, joined by a line.
fn series(out: &mut String, pts: &[(f64, f64, bool)], color: &str) {
    if pts.len() > 1 {
        let coords: Vec<String> = pts
            .iter()
            .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
            .collect();
        out.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\n",
            coords.join(" ")
        ));
    }
    for (x, y, failed) in pts {
        if *failed {
            out.push_str(&format!(
                "<path d=\"M{:.1},{:.1}l8,8m0,-8l-8,8\" stroke=\"black\" stroke-width=\"2\"/>\n",
                x - 4.0,
                y - 4.0
            ));
        } else {
            out.push_str(&format!(
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{color}\"/>\n"
            ));
        }
    }
}

/// The whole picture. Views without any timed point (not created) get no panel.
pub fn render(r: &Results) -> String {
    let views: Vec<_> = r
        .views
        .iter()
        .filter(|v| r.refresh.iter().any(|p| p.view == v.name))
        .collect();
    let cols = views.len().clamp(1, COLS);
    let rows = views.len().div_ceil(COLS).max(1);
    let width = cols as f64 * PANEL_W;
    let height = HEADER + rows as f64 * PANEL_H;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    s.push_str(&format!(
        "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">duckmv refresh time vs change size \
         (SF {}, median of {})</text>\n",
        r.sf, r.reps
    ));
    let full_name = "CTAS of the query";
    s.push_str(&format!(
        "<line x1=\"12\" y1=\"37\" x2=\"32\" y2=\"37\" stroke=\"{INCREMENTAL}\" stroke-width=\"2\"/>\
         <text x=\"36\" y=\"41\">REFRESH (auto)</text>\n\
         <line x1=\"172\" y1=\"37\" x2=\"192\" y2=\"37\" stroke=\"{FULL}\" stroke-width=\"2\"/>\
         <text x=\"196\" y=\"41\">{full_name}</text>\n\
         <text x=\"340\" y=\"41\">✕ = oracle failed</text>\n"
    ));
    for (n, v) in views.iter().enumerate() {
        let pts: Vec<_> = r.refresh.iter().filter(|p| p.view == v.name).collect();
        let ox = (n % COLS) as f64 * PANEL_W;
        let oy = HEADER + (n / COLS) as f64 * PANEL_H;
        let (x0, x1) = (ox + LEFT, ox + PANEL_W - RIGHT);
        let (y0, y1) = (oy + TOP, oy + PANEL_H - BOTTOM);
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-weight=\"bold\">{}</text>\n",
            ox + 8.0,
            oy + 16.0,
            esc(&v.label)
        ));
        s.push_str(&format!(
            "<rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#888\"/>\n",
            x1 - x0,
            y1 - y0
        ));
        // One change-size axis for every panel, so panels line up and compare at a glance.
        let xa = LogAxis::around(r.refresh.iter().map(|p| p.fraction));
        let ya = LogAxis::around(
            pts.iter()
                .flat_map(|p| [p.incremental_median_ms, p.full_median_ms])
                .flatten(),
        );
        let (Some(xa), Some(ya)) = (xa, ya) else {
            continue;
        };
        let px = |f: f64| x0 + xa.unit(f) * (x1 - x0);
        let py = |ms: f64| y1 - ya.unit(ms) * (y1 - y0);
        for d in xa.decades() {
            let x = px(d);
            s.push_str(&format!(
                "<line x1=\"{x:.1}\" y1=\"{y0:.1}\" x2=\"{x:.1}\" y2=\"{y1:.1}\" stroke=\"#eee\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                y1 + 14.0,
                percent(d)
            ));
        }
        for d in ya.decades() {
            let y = py(d);
            s.push_str(&format!(
                "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
                x0 - 4.0,
                y + 4.0,
                ms_label(d)
            ));
        }
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">change (% of {})</text>\n",
            (x0 + x1) / 2.0,
            y1 + 30.0,
            esc(&v.fact)
        ));
        let inc: Vec<_> = pts
            .iter()
            .filter_map(|p| {
                p.incremental_median_ms
                    .map(|m| (px(p.fraction), py(m), p.oracle.starts_with("FAIL")))
            })
            .collect();
        let full: Vec<_> = pts
            .iter()
            .filter_map(|p| p.full_median_ms.map(|m| (px(p.fraction), py(m), false)))
            .collect();
        series(&mut s, &full, FULL);
        series(&mut s, &inc, INCREMENTAL);
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample;

    #[test]
    fn log_axes_cover_whole_decades() {
        let a = LogAxis::around([0.0001, 0.1]).unwrap();
        assert_eq!((a.lo_exp, a.hi_exp), (-4, -1));
        assert!((a.unit(0.001) - 1.0 / 3.0).abs() < 1e-9);
        let one = LogAxis::around([5.0]).unwrap();
        assert_eq!((one.lo_exp, one.hi_exp), (0, 1));
        assert_eq!(LogAxis::around([0.0, f64::NAN]), None);
        assert_eq!(a.decades().count(), 4);
    }

    /// Tags open and close in order (a tiny well-formedness check, enough for generated SVG).
    fn balanced(svg: &str) -> bool {
        let mut stack = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            let end = rest[i..].find('>').unwrap() + i;
            let tag = &rest[i + 1..end];
            if let Some(name) = tag.strip_prefix('/') {
                if stack.pop() != Some(name.to_string()) {
                    return false;
                }
            } else if !tag.ends_with('/') {
                stack.push(tag.split_whitespace().next().unwrap().to_string());
            }
            rest = &rest[end + 1..];
        }
        stack.is_empty()
    }

    #[test]
    fn draws_one_panel_per_measured_view() {
        let svg = render(&sample());
        assert!(balanced(&svg), "{svg}");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // v1 has points, v3 was not created: one panel, escaped title.
        assert!(svg.contains("V1 &lt;agg&gt; &amp; co"));
        assert!(!svg.contains("V3 left"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(svg.contains(">0.01%<") && svg.contains(">10%<"));
        // Points lie inside the panel.
        for c in svg.split("<circle ").skip(1) {
            let cx: f64 = c.split('"').nth(1).unwrap().parse().unwrap();
            assert!((LEFT..=PANEL_W - RIGHT).contains(&cx), "{cx}");
        }
    }
}
