//! Interval charts drawn with plotters as inline SVG: one row per item, the interval as a bar on a
//! shared 0–100 % axis with the point estimate marked, refused rows labelled instead of drawn. The
//! SVG carries a `<title>` and `<desc>` and is labelled for assistive technology; the page always shows
//! the same numbers in a table beside it. Pure: text in, text out.

use crate::escape::escaped;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One row of an interval chart.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalRow {
    pub label: String,
    /// `(estimate, low, high)` in `[0, 1]`, or `None` for a refused row.
    pub interval: Option<(f64, f64, f64)>,
    /// Shown instead of an interval when `interval` is `None`.
    pub note: String,
}

/// Chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw chart {title:?}: {message}")]
pub struct ChartError {
    pub title: String,
    pub message: String,
}

// The chart is drawn for a narrow column and scales up: each row's label sits above its bar, so the
// plot spans the whole width and text stays readable when a phone shows the chart at 375 pixels.
const WIDTH: u32 = 560;
const ROW_H: u32 = 44;
const LEFT: i32 = 12;
const RIGHT_PAD: i32 = 18;
const TOP: i32 = 8;
const AXIS_H: i32 = 34;
const LABEL_PX: u32 = 17;

fn truncate_label(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= 48 {
        s.to_string()
    } else {
        let mut t: String = chars[..47].iter().collect();
        t.push('…');
        t
    }
}

/// What the SVG backend reports when an element cannot be drawn.
type DrawError = DrawingAreaErrorKind<<SVGBackend<'static> as DrawingBackend>::ErrorType>;

/// What an interval chart's axis measures: a rate (0–100 %) or a correlation (0 to 1, negative values
/// drawn at 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Percent,
    Correlation,
}

fn draw(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    rows: &[IntervalRow],
    height: u32,
    scale: Scale,
) -> Result<(), DrawError> {
    let ink = RGBColor(0x33, 0x33, 0x33);
    let grid = RGBColor(0xbb, 0xbb, 0xbb);
    let bar = RGBColor(0x1f, 0x5f, 0xa8);
    let refused = RGBColor(0x9a, 0x3b, 0x00);
    let plot_w = WIDTH as i32 - LEFT - RIGHT_PAD;
    let x_of = |v: f64| LEFT + (v.clamp(0.0, 1.0) * f64::from(plot_w)).round() as i32;
    let bottom = height as i32 - AXIS_H;
    let tick_label = |k: i32| match k {
        0 => HPos::Left,
        10 => HPos::Right,
        _ => HPos::Center,
    };
    let tick_style = TextStyle::from(("sans-serif", 15).into_font())
        .color(&ink)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for k in 0..=10 {
        let v = f64::from(k) / 10.0;
        let x = x_of(v);
        area.draw(&PathElement::new(
            vec![(x, TOP), (x, bottom)],
            grid.stroke_width(1),
        ))?;
        if k % 2 == 0 {
            area.draw(&Text::new(
                match scale {
                    Scale::Percent => format!("{}%", k * 10),
                    Scale::Correlation => format!("{:.1}", v),
                },
                (x, bottom + 6),
                tick_style.clone().pos(Pos::new(tick_label(k), VPos::Top)),
            ))?;
        }
    }
    area.draw(&PathElement::new(
        vec![(LEFT, bottom), (LEFT + plot_w, bottom)],
        ink.stroke_width(1),
    ))?;
    let label_style = TextStyle::from(("sans-serif", LABEL_PX).into_font())
        .color(&ink)
        .pos(Pos::new(HPos::Left, VPos::Top));
    for (i, row) in rows.iter().enumerate() {
        let top = TOP + (i as i32) * ROW_H as i32;
        let y = top + ROW_H as i32 - 12;
        area.draw(&Text::new(
            truncate_label(&row.label),
            (LEFT, top + 2),
            label_style.clone(),
        ))?;
        match row.interval {
            Some((est, lo, hi)) => {
                area.draw(&Rectangle::new(
                    [(x_of(lo), y - 5), (x_of(hi).max(x_of(lo) + 2), y + 5)],
                    bar.filled(),
                ))?;
                area.draw(&Circle::new((x_of(est), y), 7, ink.filled()))?;
            }
            None => {
                let style = TextStyle::from(("sans-serif", 15).into_font())
                    .color(&refused)
                    .pos(Pos::new(HPos::Left, VPos::Center));
                area.draw(&Text::new(truncate_label(&row.note), (LEFT + 6, y), style))?;
            }
        }
    }
    Ok(())
}

/// Draw an interval chart as an inline SVG element with `<title>` and `<desc>`. `id` must be unique on
/// the page (it names the title and description elements).
pub fn interval_svg(
    id: &str,
    title: &str,
    description: &str,
    rows: &[IntervalRow],
) -> Result<String, ChartError> {
    interval_svg_on(Scale::Percent, id, title, description, rows)
}

/// [`interval_svg`] on the given axis.
pub fn interval_svg_on(
    scale: Scale,
    id: &str,
    title: &str,
    description: &str,
    rows: &[IntervalRow],
) -> Result<String, ChartError> {
    let height = (TOP + (rows.len().max(1) as i32) * ROW_H as i32 + AXIS_H) as u32;
    let mut buf = String::new();
    {
        let backend = SVGBackend::with_string(&mut buf, (WIDTH, height));
        let area = backend.into_drawing_area();
        draw(&area, rows, height, scale).map_err(|x| ChartError {
            title: title.to_string(),
            message: x.to_string(),
        })?;
        area.present().map_err(|x| ChartError {
            title: title.to_string(),
            message: x.to_string(),
        })?;
    }
    // Make the SVG responsive and accessible: a viewBox instead of fixed size, role, title and desc.
    let Some(open_end) = buf.find('>') else {
        return Err(ChartError {
            title: title.to_string(),
            message: "backend produced no SVG element".to_string(),
        });
    };
    let body = &buf[open_end + 1..];
    let id = escaped(id);
    Ok(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\"><title id=\"{id}-title\">{}</title><desc id=\"{id}-desc\">{}</desc>{}",
        escaped(title),
        escaped(description),
        body.trim_start()
    ))
}

/// A one-row interval drawn on the shared 0–100 % axis, for a table cell beside the numbers it draws
/// (hidden from assistive technology: the cell's text says the same). `None` draws the empty axis.
/// Every bar of a column spans the same width, so bars in one table share the axis.
pub fn inline_bar(interval: Option<(f64, f64, f64)>) -> String {
    let x = |v: f64| (v.clamp(0.0, 1.0) * 1000.0).round() / 10.0;
    let mut s = String::from(
        "<svg class=\"bar\" viewBox=\"-2 0 104 12\" preserveAspectRatio=\"none\" aria-hidden=\"true\" focusable=\"false\"><line class=\"axis\" x1=\"0\" y1=\"11.5\" x2=\"100\" y2=\"11.5\"/><line class=\"mid\" x1=\"50\" y1=\"8\" x2=\"50\" y2=\"12\"/>",
    );
    if let Some((est, lo, hi)) = interval {
        let (lo, hi, est) = (x(lo), x(hi), x(est));
        s.push_str(&format!(
            "<rect class=\"ci\" x=\"{lo}\" y=\"3\" width=\"{}\" height=\"5\"/><rect class=\"est\" x=\"{}\" y=\"1\" width=\"1.6\" height=\"9\"/>",
            ((hi - lo).max(0.8) * 10.0).round() / 10.0,
            ((est - 0.8) * 10.0).round() / 10.0,
        ));
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_correlation_chart_is_labelled_as_correlations_not_percent() {
        let rows = vec![IntervalRow {
            label: "a vs b".into(),
            interval: Some((0.9, 0.6, 1.0)),
            note: String::new(),
        }];
        let corr =
            interval_svg_on(Scale::Correlation, "c", "Spearman", "one row", &rows).expect("draws");
        let labels = |svg: &str| -> Vec<String> {
            svg.split("<text")
                .skip(1)
                .filter_map(|t| t.split('>').nth(1))
                .map(|t| t.split('<').next().unwrap_or("").trim().to_string())
                .collect()
        };
        let corr_labels = labels(&corr);
        assert!(
            corr_labels.contains(&"0.4".to_string()) && corr_labels.contains(&"1.0".to_string()),
            "{corr_labels:?}"
        );
        assert!(!corr.contains('%'), "{corr}");
        let rate = interval_svg("c", "Completion", "one row", &rows).expect("draws");
        assert!(labels(&rate).contains(&"40%".to_string()), "{rate}");
    }

    #[test]
    fn chart_has_title_desc_and_is_deterministic() {
        let rows = vec![
            IntervalRow {
                label: "alpha <x>".into(),
                interval: Some((0.5, 0.3, 0.7)),
                note: String::new(),
            },
            IntervalRow {
                label: "beta".into(),
                interval: None,
                note: "REFUSED: KILL".into(),
            },
        ];
        let a = interval_svg("c1", "Completion", "two rows", &rows).expect("draws");
        let b = interval_svg("c1", "Completion", "two rows", &rows).expect("draws");
        assert_eq!(a, b);
        assert!(a.starts_with("<svg xmlns"));
        assert!(a.contains("<title id=\"c1-title\">Completion</title>"));
        assert!(a.contains("<desc id=\"c1-desc\">two rows</desc>"));
        assert!(a.contains("alpha &lt;x&gt;"));
        assert!(a.contains("REFUSED: KILL"));
        assert!(a.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn inline_bars_share_the_axis() {
        let b = inline_bar(Some((0.5, 0.25, 0.75)));
        assert!(b.contains("x=\"25\" y=\"3\" width=\"50\""), "{b}");
        assert!(b.contains("aria-hidden=\"true\""));
        assert!(!inline_bar(None).contains("class=\"ci\""));
    }
}
