//! What `info` reports of a graph: its facts, its change log's, degree statistics and the
//! measured cost of one node's embedding with given settings; as data (`Serialize`: the JSON
//! of `info --json`) and as the text `info` prints ([`Report::text`]).

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::compress::LinearMap;
use super::config::{EmbeddingConfig, SettingValue, SETTINGS};
use super::cost::{estimate, CostEstimate, Spread};
use crate::error::Result;
use crate::graph::csr::Graph;
use crate::graph::overlay::LogInfo;
use crate::graph::stats::{degree_stats, DegreeStats};
use crate::human::{bytes, general, grouped, seconds};

/// How a measurement is shown (a count, bytes, seconds).
type Format = dyn Fn(f64) -> String;

/// The facts `info` shows, in the order its JSON lists them.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub path: Option<String>,
    pub nodes: usize,
    pub edges: u64,
    pub arcs: u64,
    pub directed: bool,
    pub weighted: bool,
    pub id_kind: &'static str,
    /// Internal indices differ from id order (a file written by `reorder`).
    pub permuted: bool,
    /// The graph file's size; None for a graph built in memory.
    pub file_bytes: Option<usize>,
    pub log: Option<LogFacts>,
    pub degree: Degrees,
    pub estimate: Estimate,
}

/// The change log's facts (the JSON's keys in name order).
#[derive(Clone, Debug, Serialize)]
pub struct LogFacts {
    pub adds: u64,
    pub bytes: u64,
    pub changed_nodes: u64,
    pub commits: u64,
    /// The merge rule of an edge added again: "sum" or "max".
    pub merge: &'static str,
    pub new_nodes: u64,
    pub removes: u64,
}

/// Degree statistics: out-degrees of a directed graph, whose nodes of degree 0 are
/// "zero_out_degree" rather than "isolated".
#[derive(Clone, Copy, Debug)]
pub struct Degrees {
    pub directed: bool,
    pub stats: DegreeStats,
}

/// The settings measured with and, for a sample of at least one node, the measurements.
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    pub settings: Settings,
    pub sample: usize,
    #[serde(flatten)]
    pub measured: Option<Measured>,
}

/// An embedding config serialized as its settings by name, in [`SETTINGS`] order.
#[derive(Clone, Copy, Debug)]
pub struct Settings(pub EmbeddingConfig);

/// The spread of one node's cost over the sample and what it implies for the whole graph.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Measured {
    pub support_nodes: Spread,
    pub seconds_per_node: Spread,
    pub touched_nodes: Spread,
    pub edge_updates: Spread,
    pub workspace_bytes: Spread,
    pub threads: usize,
    pub output_bytes_per_node: u64,
    /// The whole graph's embedding time on `threads` threads, from the mean per node.
    pub all_nodes_seconds: f64,
    pub all_nodes_output_bytes: u64,
}

impl Report {
    /// Measures `graph` with `cfg` (`map`: a compressed config's fitted map) over `sample`
    /// nodes picked by `seed` (see [`estimate`]); the whole-graph time assumes `threads`.
    pub fn measure(
        graph: &Graph,
        cfg: &EmbeddingConfig,
        map: Option<&LinearMap>,
        sample: usize,
        seed: u64,
        threads: usize,
    ) -> Result<Report> {
        let deg = degree_stats(graph)?;
        let est = estimate(graph, cfg, map, sample, seed)?;
        let log = graph.log_state().map(|s| s.info).filter(|i| i.exists);
        Ok(Report {
            path: graph.path().map(|p| p.to_string_lossy().into_owned()),
            nodes: graph.num_nodes(),
            edges: graph.num_edges(),
            arcs: graph.num_arcs(),
            directed: graph.directed(),
            weighted: graph.weighted(),
            id_kind: graph.id_kind().name(),
            permuted: graph.permuted(),
            file_bytes: graph.path().map(|_| graph.image().len()),
            log: log.map(|i: LogInfo| LogFacts {
                adds: i.adds,
                bytes: i.bytes,
                changed_nodes: i.changed_nodes,
                commits: i.commits,
                merge: if i.merge_max { "max" } else { "sum" },
                new_nodes: i.new_nodes,
                removes: i.removes,
            }),
            degree: Degrees {
                directed: graph.directed(),
                stats: deg,
            },
            estimate: Estimate {
                settings: Settings(*cfg),
                sample: est.sample,
                measured: (est.sample > 0).then(|| Measured::of(&est, cfg, graph, threads)),
            },
        })
    }

    /// The report as `info` prints it; `label` names the graph.
    pub fn text(&self, label: &str) -> String {
        let g = |x: u64| grouped(x as f64, 0);
        let how = match (self.directed, self.weighted) {
            (true, true) => "directed, weighted",
            (true, false) => "directed",
            (false, true) => "undirected, weighted",
            (false, false) => "undirected",
        };
        let mut lines = vec![
            format!("graph        {label}"),
            format!("nodes        {}", g(self.nodes as u64)),
            format!(
                "edges        {} ({how}; {} stored arcs)",
                g(self.edges),
                g(self.arcs)
            ),
            format!(
                "node ids     {}{}",
                self.id_kind,
                if self.permuted {
                    " (stored in an order other than id order)"
                } else {
                    ""
                }
            ),
        ];
        if let Some(n) = self.file_bytes {
            lines.push(format!("file size    {}", bytes(n as f64)));
        }
        if let Some(l) = &self.log {
            lines.push(format!(
                "change log   {} commits: {} adds, {} removes; {} new nodes, {} rows in the log; \
                 {} (merge={}; `compact` folds it into the file)",
                g(l.commits),
                g(l.adds),
                g(l.removes),
                g(l.new_nodes),
                g(l.changed_nodes),
                bytes(l.bytes as f64),
                l.merge
            ));
        }
        let d = &self.degree.stats;
        let (kind, zero) = self.degree.names();
        lines.push(format!(
            "{kind:<12} min {}  mean {}  median {}  max {}  {} {}",
            g(d.min),
            grouped(d.mean, 2),
            grouped(d.median, 1),
            g(d.max),
            zero.replace('_', " "),
            g(d.zero)
        ));
        if let Some(m) = &self.estimate.measured {
            let default = EmbeddingConfig::DEFAULT;
            let changed: Vec<String> = SETTINGS
                .iter()
                .filter_map(|s| {
                    let v = self.estimate.settings.0.get(s.name)?;
                    (Some(v) != default.get(s.name)).then(|| match v {
                        SettingValue::Float(x) => format!("{}={}", s.name, general(x)),
                        _ => format!("{}={v}", s.name),
                    })
                })
                .collect();
            let changed = if changed.is_empty() {
                "the default settings".to_string()
            } else {
                changed.join(", ")
            };
            lines.push(String::new());
            lines.push(format!(
                "per-node cost with {changed} (measured on {} sampled nodes, 1 thread; \
                 median / p95 / max):",
                self.estimate.sample
            ));
            let count = |x: f64| grouped(x, 0);
            let rows: [(&str, Spread, &Format); 5] = [
                ("time", m.seconds_per_node, &seconds),
                ("nodes with p > 0", m.support_nodes, &count),
                ("touched nodes", m.touched_nodes, &count),
                ("edge updates", m.edge_updates, &count),
                ("workspace", m.workspace_bytes, &bytes),
            ];
            for (name, q, f) in rows {
                lines.push(format!(
                    "  {name:<24} {} / {} / {}",
                    f(q.median),
                    f(q.p95),
                    f(q.max)
                ));
            }
            lines.push(format!(
                "  {:<24} {}",
                "output per node",
                bytes(m.output_bytes_per_node as f64)
            ));
            lines.push(format!(
                "all {} nodes: about {} on {} thread(s), {} of output",
                g(self.nodes as u64),
                seconds(m.all_nodes_seconds),
                m.threads,
                bytes(m.all_nodes_output_bytes as f64)
            ));
        }
        lines.join("\n")
    }
}

impl Measured {
    fn of(est: &CostEstimate, cfg: &EmbeddingConfig, graph: &Graph, threads: usize) -> Measured {
        let out_bytes = 4 * cfg.dim as u64;
        let n = graph.num_nodes();
        Measured {
            support_nodes: est.support,
            seconds_per_node: est.seconds,
            touched_nodes: est.touched,
            edge_updates: est.pushes,
            workspace_bytes: est.heap_bytes,
            threads,
            output_bytes_per_node: out_bytes,
            all_nodes_seconds: est.mean_seconds * n as f64 / threads as f64,
            all_nodes_output_bytes: out_bytes * n as u64,
        }
    }
}

impl Degrees {
    /// The statistic's name and its zero-degree count's.
    fn names(&self) -> (&'static str, &'static str) {
        if self.directed {
            ("out-degree", "zero_out_degree")
        } else {
            ("degree", "isolated")
        }
    }
}

impl Serialize for Degrees {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let (kind, zero) = self.names();
        let d = &self.stats;
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("kind", kind)?;
        m.serialize_entry("min", &d.min)?;
        m.serialize_entry("mean", &d.mean)?;
        m.serialize_entry("median", &d.median)?;
        m.serialize_entry("max", &d.max)?;
        m.serialize_entry(zero, &d.zero)?;
        m.end()
    }
}

impl Serialize for Settings {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(SETTINGS.len()))?;
        for setting in SETTINGS {
            match self.0.get(setting.name) {
                Some(SettingValue::Int(v)) => m.serialize_entry(setting.name, &v)?,
                Some(SettingValue::Float(v)) => m.serialize_entry(setting.name, &v)?,
                Some(SettingValue::Choice(v)) => m.serialize_entry(setting.name, v)?,
                None => {}
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::stats::tests::graph;

    fn spread(median: f64, p95: f64, max: f64) -> Spread {
        Spread { median, p95, max }
    }

    /// A report with fixed measurements (the expected text is what the command line printed
    /// for them before the report was written in Rust).
    fn fixed() -> Report {
        let cfg = EmbeddingConfig {
            dim: 64,
            wide_dim: 256,
            ppr: crate::embed::config::PprConfig {
                alpha: 0.25,
                eps: 1e-7,
                ..EmbeddingConfig::DEFAULT.ppr
            },
            ..EmbeddingConfig::DEFAULT
        };
        Report {
            path: Some("lw.graph".into()),
            nodes: 1_234_567,
            edges: 7,
            arcs: 7,
            directed: true,
            weighted: true,
            id_kind: "implicit",
            permuted: true,
            file_bytes: Some(517),
            log: Some(LogFacts {
                adds: 2,
                bytes: 624,
                changed_nodes: 2,
                commits: 1,
                merge: "sum",
                new_nodes: 2,
                removes: 0,
            }),
            degree: Degrees {
                directed: true,
                stats: DegreeStats {
                    min: 0,
                    max: 2,
                    mean: 1.0,
                    median: 1.0,
                    zero: 1,
                },
            },
            estimate: Estimate {
                settings: Settings(cfg),
                sample: 3,
                measured: Some(Measured {
                    support_nodes: spread(5.0, 5.9, 6.0),
                    seconds_per_node: spread(5e-6, 0.0411, 45.0),
                    touched_nodes: spread(5.0, 6.0, 6.0),
                    edge_updates: spread(91.0, 1500.5, 1560.0),
                    workspace_bytes: spread(24704.0, 24800.0, 4e6),
                    threads: 2,
                    output_bytes_per_node: 256,
                    all_nodes_seconds: 9000.0,
                    all_nodes_output_bytes: 14336,
                }),
            },
        }
    }

    #[test]
    fn text_is_the_command_lines_report() {
        let want = "\
graph        lw.graph
nodes        1,234,567
edges        7 (directed, weighted; 7 stored arcs)
node ids     implicit (stored in an order other than id order)
file size    517 B
change log   1 commits: 2 adds, 0 removes; 2 new nodes, 2 rows in the log; 624 B (merge=sum; `compact` folds it into the file)
out-degree   min 0  mean 1.00  median 1.0  max 2  zero out degree 1

per-node cost with dim=64, alpha=0.25, eps=1e-07, wide_dim=256 (measured on 3 sampled nodes, 1 thread; median / p95 / max):
  time                     5 µs / 41.1 ms / 45.0 s
  nodes with p > 0         5 / 6 / 6
  touched nodes            5 / 6 / 6
  edge updates             91 / 1,500 / 1,560
  workspace                24.1 KiB / 24.2 KiB / 3.8 MiB
  output per node          256 B
all 1,234,567 nodes: about 2.5 h on 2 thread(s), 14.0 KiB of output";
        assert_eq!(fixed().text("lw.graph"), want);
    }

    #[test]
    fn json_lists_the_facts_in_order() {
        let r = fixed();
        let json = serde_json::to_string(&r).unwrap();
        let keys = [
            "\"path\"",
            "\"nodes\"",
            "\"edges\"",
            "\"arcs\"",
            "\"directed\"",
            "\"weighted\"",
            "\"id_kind\"",
            "\"permuted\"",
            "\"file_bytes\"",
            "\"log\"",
            "\"degree\"",
            "\"zero_out_degree\"",
            "\"estimate\"",
            "\"settings\"",
            "\"dim\"",
            "\"fit_nodes\"",
            "\"sample\"",
            "\"support_nodes\"",
            "\"workspace_bytes\"",
            "\"all_nodes_output_bytes\"",
        ];
        let at: Vec<usize> = keys.iter().map(|k| json.find(k).expect(k)).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{json}");
        assert!(json.contains("\"merge\":\"sum\"") && json.contains("\"eps\":1e-7"));
        // Without a sample: the settings and the sample size only.
        let g = graph(3, &[(0, 1), (1, 2)], false);
        let r = Report::measure(&g, &EmbeddingConfig::DEFAULT, None, 0, 0, 4).unwrap();
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["estimate"].as_object().unwrap().len(), 2);
        assert_eq!(json["degree"]["isolated"], 0);
        assert_eq!(
            (json["log"].is_null(), json["file_bytes"].is_null()),
            (true, true)
        );
        let text = r.text("g");
        assert!(text.ends_with("degree       min 1  mean 1.33  median 1.0  max 2  isolated 0"));
    }

    #[test]
    fn measured_report_counts_every_sampled_node() {
        let g = graph(4, &[(0, 1), (1, 2), (2, 0), (2, 3)], false);
        let r = Report::measure(&g, &EmbeddingConfig::DEFAULT, None, 10, 0, 2).unwrap();
        let m = r.estimate.measured.unwrap();
        assert_eq!(r.estimate.sample, 4);
        assert_eq!(m.support_nodes.max, 4.0); // the push reaches the whole component
        assert_eq!(m.all_nodes_output_bytes, 4 * 4 * 512);
        assert!(r
            .text("g")
            .contains("per-node cost with the default settings (measured on 4"));
    }
}
