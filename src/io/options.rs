//! How to read an input, defined once: every reading option's kind, default, help and the
//! formats that use it ([`READ_SETTINGS`]), and their validation.
//!
//! [`ReadOptions`] is the one object every entry point passes whole: `convert` (library and
//! command line), `update`, `from_pandas`/`from_arrow` and the engines. The Python binding
//! builds it from keywords through the table, the command line builds its reading flags from
//! the table, and `.ci/gen_settings.py` writes the stubs and the table of docs/CLI.md from it.
//!
//! Adding a reading option: one [`READ_SETTINGS`] row, its field with its `get`/`set` arms and
//! its check in [`ReadOptions::validate`] (all in this file); then the reader code that uses it
//! and a test. Nothing else names the options one by one.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::graph::build::Merge;
use crate::graph::external::{BuildOptions, IdMode, SelfLoops, DEFAULT_MEMORY_LIMIT};
use crate::io::adjlist::AdjOptions;
use crate::io::text::{Column, Delimiter, Flavor, TextOptions};
use crate::io::{format, known_format, FORMATS};

/// What values a reading option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadKind {
    /// True, False, or None (the input decides).
    Flag,
    /// One of these names.
    Choice(&'static [&'static str]),
    /// `"auto"` or the name of one of the [`FORMATS`].
    Format,
    /// A string, or None.
    Text,
    /// A column: a 0-based index or a header name (a key, for JSON), or None.
    Column,
    /// A non-negative integer, or None.
    Int,
    /// A byte count: an integer or a size such as `"2G"` ([`parse_size`]).
    Size,
    /// A file-system path, or None.
    Path,
}

impl ReadKind {
    /// The kind's name as the bindings and the generated stubs spell it.
    pub fn name(&self) -> &'static str {
        match self {
            ReadKind::Flag => "flag",
            ReadKind::Choice(_) | ReadKind::Format => "choice",
            ReadKind::Text => "text",
            ReadKind::Column => "column",
            ReadKind::Int => "int",
            ReadKind::Size => "size",
            ReadKind::Path => "path",
        }
    }
}

/// Where an option acts: reading the file's records, or shaping the graph that is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// How the file's records are read: `update` takes these too (the same file reads the
    /// same way whether it is converted or added to a graph).
    Parse,
    /// How the graph is built (direction, ids, duplicates, memory): `update` takes these from
    /// the graph it changes.
    Build,
}

/// One reading option: its name, kind, help and the formats that use it.
#[derive(Clone, Copy, Debug)]
pub struct ReadSetting {
    pub name: &'static str,
    pub kind: ReadKind,
    pub stage: Stage,
    /// Whether every format takes it; otherwise the formats that list it in their
    /// [`Format::options`](crate::io::Format) do.
    pub every_format: bool,
    /// What the command line and the docs call its value (`COL`, `SIZE`, ...); empty for
    /// flags and choices.
    pub metavar: &'static str,
    /// One line, for `--help` and the table of docs/CLI.md.
    pub help: &'static str,
}

pub const ID_KINDS: &[&str] = &["auto", "int", "str"];
pub const SELF_LOOPS: &[&str] = &["keep", "drop"];
pub const MERGES: &[&str] = &["sum", "max"];

/// Every reading option, in the order users see them (keywords, `repr`, command line, docs).
pub const READ_SETTINGS: &[ReadSetting] = &[
    ReadSetting {
        name: "format",
        kind: ReadKind::Format,
        stage: Stage::Parse,
        every_format: true,
        metavar: "",
        help: "input format; auto: the file's content first (magic, Matrix Market banner, XML \
               root, Pajek, JSON), then its extension, else a text edge list",
    },
    ReadSetting {
        name: "directed",
        kind: ReadKind::Flag,
        stage: Stage::Build,
        every_format: true,
        metavar: "",
        help: "edges are directed; default: what the input says (node-link JSON, a matrix's \
               symmetry, Matrix Market's banner, GraphML's edgedefault, Pajek's *Arcs), else \
               undirected",
    },
    ReadSetting {
        name: "weighted",
        kind: ReadKind::Flag,
        stage: Stage::Build,
        every_format: false,
        metavar: "",
        help: "read edge weights; default: iff a weight column is given or named (text, \
               tables), an edge has one (JSON), a value is not 1 (matrices, Pajek), the values \
               are numbers (Matrix Market), an edge key is named weight (GraphML)",
    },
    ReadSetting {
        name: "delimiter",
        kind: ReadKind::Text,
        stage: Stage::Parse,
        every_format: false,
        metavar: "CHAR",
        help: "text field separator: ',', 'tab', ';', ' ' (one space, as CSV), 'whitespace' \
               or a punctuation character; default: detected per file",
    },
    ReadSetting {
        name: "comment",
        kind: ReadKind::Text,
        stage: Stage::Parse,
        every_format: false,
        metavar: "CHARS",
        help: "text lines starting with one of these ASCII characters (after spaces) are skipped",
    },
    ReadSetting {
        name: "header",
        kind: ReadKind::Flag,
        stage: Stage::Parse,
        every_format: false,
        metavar: "",
        help: "the first record of each text file holds column names; default: detected \
               (docs/CLI.md, 'What a text file means'), true when a column is named",
    },
    ReadSetting {
        name: "src_col",
        kind: ReadKind::Column,
        stage: Stage::Parse,
        every_format: false,
        metavar: "COL",
        help: "source column (0-based index or name); default: a known pair of names \
               (src/dst, source/target, from/to, ...), else the first two columns",
    },
    ReadSetting {
        name: "dst_col",
        kind: ReadKind::Column,
        stage: Stage::Parse,
        every_format: false,
        metavar: "COL",
        help: "destination column (0-based index or name)",
    },
    ReadSetting {
        name: "weight_col",
        kind: ReadKind::Column,
        stage: Stage::Parse,
        every_format: false,
        metavar: "COL",
        help: "weight column (0-based index or name); implies weighted",
    },
    ReadSetting {
        name: "decimal_comma",
        kind: ReadKind::Flag,
        stage: Stage::Parse,
        every_format: false,
        metavar: "",
        help: "text weights may be written with a decimal comma (1,5); default: with the ';' \
               delimiter",
    },
    ReadSetting {
        name: "id_kind",
        kind: ReadKind::Choice(ID_KINDS),
        stage: Stage::Build,
        every_format: false,
        metavar: "",
        help: "node id type; auto: int if every id is a canonical integer (12, not 012 or \
               +12), else str",
    },
    ReadSetting {
        name: "num_nodes",
        kind: ReadKind::Int,
        stage: Stage::Build,
        every_format: false,
        metavar: "N",
        help: "ids are 0..num_nodes-1 (isolated nodes kept); set by readers of matrices",
    },
    ReadSetting {
        name: "self_loops",
        kind: ReadKind::Choice(SELF_LOOPS),
        stage: Stage::Build,
        every_format: true,
        metavar: "",
        help: "keep edges u-u (stored once) or drop them (u stays a node)",
    },
    ReadSetting {
        name: "merge",
        kind: ReadKind::Choice(MERGES),
        stage: Stage::Build,
        every_format: true,
        metavar: "",
        help: "weights of duplicate edges: sum or max (unweighted duplicates collapse to one)",
    },
    ReadSetting {
        name: "var",
        kind: ReadKind::Text,
        stage: Stage::Parse,
        every_format: false,
        metavar: "NAME",
        help: ".mat variable holding the adjacency matrix; default: the only sparse matrix",
    },
    ReadSetting {
        name: "properties",
        kind: ReadKind::Path,
        stage: Stage::Parse,
        every_format: false,
        metavar: "PATH",
        help: "WebGraph: the .properties file, when it is not BASENAME.properties beside \
               BASENAME.graph",
    },
    ReadSetting {
        name: "memory_limit",
        kind: ReadKind::Size,
        stage: Stage::Build,
        every_format: true,
        metavar: "SIZE",
        help: "memory budget of the out-of-core builder, e.g. 512M, 8G; covers its per-node \
               structures (~16-40 bytes per node) too",
    },
    ReadSetting {
        name: "tmp_dir",
        kind: ReadKind::Path,
        stage: Stage::Build,
        every_format: true,
        metavar: "DIR",
        help: "where the out-of-core builder spills sorted runs; default: the output's folder",
    },
];

/// The reading option `name`, if there is one.
pub fn read_setting(name: &str) -> Option<&'static ReadSetting> {
    READ_SETTINGS.iter().find(|s| s.name == name)
}

impl ReadSetting {
    /// Whether format `fmt` uses this option.
    pub fn applies_to(&self, fmt: &str) -> bool {
        self.every_format || format(fmt).is_some_and(|f| f.options.contains(&self.name))
    }

    /// The formats that use this option, in the order of [`FORMATS`].
    pub fn formats(&self) -> Vec<&'static str> {
        FORMATS
            .iter()
            .filter(|f| self.applies_to(f.name))
            .map(|f| f.name)
            .collect()
    }
}

/// One option's value, as it crosses to other languages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadValue {
    /// Not given: the input or the reader decides.
    None,
    Bool(bool),
    Int(u64),
    Text(String),
    Column(Column),
    Path(PathBuf),
}

/// How to read an input: every option of `convert`, validated as a whole by
/// [`validate`](Self::validate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// `"auto"` or the name of one of the [`FORMATS`].
    pub format: String,
    pub directed: Option<bool>,
    pub weighted: Option<bool>,
    pub delimiter: Option<String>,
    pub comment: String,
    pub header: Option<bool>,
    pub src_col: Option<Column>,
    pub dst_col: Option<Column>,
    pub weight_col: Option<Column>,
    pub decimal_comma: Option<bool>,
    pub id_kind: &'static str,
    pub num_nodes: Option<u64>,
    pub self_loops: &'static str,
    pub merge: &'static str,
    pub var: Option<String>,
    pub properties: Option<PathBuf>,
    pub memory_limit: u64,
    pub tmp_dir: Option<PathBuf>,
}

impl Default for ReadOptions {
    /// The defaults: the only place they are written.
    fn default() -> Self {
        ReadOptions {
            format: "auto".into(),
            directed: None,
            weighted: None,
            delimiter: None,
            comment: "#%".into(),
            header: None,
            src_col: None,
            dst_col: None,
            weight_col: None,
            decimal_comma: None,
            id_kind: "auto",
            num_nodes: None,
            self_loops: "keep",
            merge: "sum",
            var: None,
            properties: None,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            tmp_dir: None,
        }
    }
}

fn choice(s: &'static [&'static str], name: &str, v: &str) -> Result<&'static str> {
    s.iter().copied().find(|&c| c == v).ok_or_else(|| {
        Error::param(format!(
            "{name} must be one of {}, got {v:?}",
            s.iter()
                .map(|c| format!("'{c}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

impl ReadOptions {
    /// The value of option `name`, or None if there is no such option.
    pub fn get(&self, name: &str) -> Option<ReadValue> {
        use ReadValue as V;
        let flag = |b: Option<bool>| b.map_or(V::None, V::Bool);
        let text = |t: &Option<String>| t.clone().map_or(V::None, V::Text);
        let col = |c: &Option<Column>| c.clone().map_or(V::None, V::Column);
        let path = |p: &Option<PathBuf>| p.clone().map_or(V::None, V::Path);
        Some(match name {
            "format" => V::Text(self.format.clone()),
            "directed" => flag(self.directed),
            "weighted" => flag(self.weighted),
            "delimiter" => text(&self.delimiter),
            "comment" => V::Text(self.comment.clone()),
            "header" => flag(self.header),
            "src_col" => col(&self.src_col),
            "dst_col" => col(&self.dst_col),
            "weight_col" => col(&self.weight_col),
            "decimal_comma" => flag(self.decimal_comma),
            "id_kind" => V::Text(self.id_kind.into()),
            "num_nodes" => self.num_nodes.map_or(V::None, V::Int),
            "self_loops" => V::Text(self.self_loops.into()),
            "merge" => V::Text(self.merge.into()),
            "var" => text(&self.var),
            "properties" => path(&self.properties),
            "memory_limit" => V::Int(self.memory_limit),
            "tmp_dir" => path(&self.tmp_dir),
            _ => return None,
        })
    }

    /// Sets option `name`. The value's kind must be the table's (`None` resets an optional
    /// option); the options are checked together by [`validate`](Self::validate).
    pub fn set(&mut self, name: &str, value: ReadValue) -> Result<()> {
        use ReadValue as V;
        let wrong = || {
            let kind = read_setting(name).map_or("?", |s| s.kind.name());
            Error::param(format!("{name} takes a {kind} value, got {value:?}"))
        };
        let flag = |v: &ReadValue| match v {
            V::None => Ok(None),
            V::Bool(b) => Ok(Some(*b)),
            _ => Err(wrong()),
        };
        let text = |v: &ReadValue| match v {
            V::None => Ok(None),
            V::Text(t) => Ok(Some(t.clone())),
            _ => Err(wrong()),
        };
        let col = |v: &ReadValue| match v {
            V::None => Ok(None),
            V::Column(c) => Ok(Some(c.clone())),
            _ => Err(wrong()),
        };
        let path = |v: &ReadValue| match v {
            V::None => Ok(None),
            V::Path(p) => Ok(Some(p.clone())),
            V::Text(t) => Ok(Some(PathBuf::from(t))),
            _ => Err(wrong()),
        };
        let pick = |set: &'static [&'static str], v: &ReadValue| match v {
            V::Text(t) => choice(set, name, t),
            _ => Err(wrong()),
        };
        match name {
            "format" => match &value {
                V::Text(t) if t == "auto" => self.format = t.clone(),
                V::Text(t) => self.format = known_format(t)?.name.into(),
                _ => return Err(wrong()),
            },
            "directed" => self.directed = flag(&value)?,
            "weighted" => self.weighted = flag(&value)?,
            "delimiter" => self.delimiter = text(&value)?,
            "comment" => self.comment = text(&value)?.ok_or_else(wrong)?,
            "header" => self.header = flag(&value)?,
            "src_col" => self.src_col = col(&value)?,
            "dst_col" => self.dst_col = col(&value)?,
            "weight_col" => self.weight_col = col(&value)?,
            "decimal_comma" => self.decimal_comma = flag(&value)?,
            "id_kind" => self.id_kind = pick(ID_KINDS, &value)?,
            "num_nodes" => {
                self.num_nodes = match value {
                    V::None => None,
                    V::Int(n) => Some(n),
                    _ => return Err(wrong()),
                }
            }
            "self_loops" => self.self_loops = pick(SELF_LOOPS, &value)?,
            "merge" => self.merge = pick(MERGES, &value)?,
            "var" => self.var = text(&value)?,
            "properties" => self.properties = path(&value)?,
            "memory_limit" => {
                self.memory_limit = match &value {
                    V::None => DEFAULT_MEMORY_LIMIT,
                    V::Int(n) => *n,
                    V::Text(t) => parse_size(t)?,
                    _ => return Err(wrong()),
                }
            }
            "tmp_dir" => self.tmp_dir = path(&value)?,
            _ => return Err(Error::param(format!("no reading option {name:?}"))),
        }
        Ok(())
    }

    /// Checks the options together (`Error::InvalidParameter`).
    pub fn validate(&self) -> Result<()> {
        if self.weight_col.is_some() && self.weighted == Some(false) {
            return Err(Error::param(
                "weight_col is given but weighted=False; drop one of them",
            ));
        }
        if !self.comment.is_ascii() {
            return Err(Error::param(format!(
                "comment characters must be ASCII, got {:?}",
                self.comment
            )));
        }
        if self.memory_limit == 0 {
            return Err(Error::param("memory_limit must be > 0, got 0"));
        }
        if let Some(d) = self.delimiter.as_deref().filter(|d| !d.is_empty()) {
            Delimiter::parse(d)?;
        }
        Ok(())
    }

    /// Names of the options that differ from their defaults (`format` aside).
    pub fn given(&self) -> Vec<&'static str> {
        let default = ReadOptions::default();
        READ_SETTINGS
            .iter()
            .filter(|s| s.name != "format" && self.get(s.name) != default.get(s.name))
            .map(|s| s.name)
            .collect()
    }

    /// Refuses options that mean nothing for format `fmt`.
    pub fn check_applies(&self, fmt: &str) -> Result<()> {
        let bad: Vec<&str> = self
            .given()
            .into_iter()
            .filter(|n| read_setting(n).is_some_and(|s| !s.applies_to(fmt)))
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(Error::param(format!(
                "{} do(es) not apply to {fmt} input",
                bad.join(", ")
            )))
        }
    }

    /// The out-of-core builder's options (`weighted` is settled by the reader; `directed`
    /// None is undirected unless the reader's input says otherwise).
    pub fn build(&self) -> Result<BuildOptions> {
        Ok(BuildOptions {
            directed: self.directed.unwrap_or(false),
            weighted: self.weighted.unwrap_or(false),
            ids: IdMode::parse(self.id_kind)?,
            num_nodes: self.num_nodes,
            self_loops: SelfLoops::parse(self.self_loops)?,
            merge: self.merge()?,
            memory_limit: self.memory_limit,
            tmp_dir: self.tmp_dir.clone(),
        })
    }

    pub fn merge(&self) -> Result<Merge> {
        Merge::parse(self.merge)
    }

    /// The delimiter given (None or `""`: detected per file).
    pub fn delimiter(&self) -> Result<Option<Delimiter>> {
        self.delimiter
            .as_deref()
            .filter(|d| !d.is_empty())
            .map(Delimiter::parse)
            .transpose()
    }

    /// The text reader's options (`format` one of the text flavours).
    pub fn text(&self) -> Result<TextOptions> {
        self.validate()?;
        Ok(TextOptions {
            flavor: Flavor::parse(&self.format)?,
            delimiter: self.delimiter()?,
            comment: self.comment.as_bytes().to_vec(),
            header: self.header,
            src_col: self.src_col.clone(),
            dst_col: self.dst_col.clone(),
            weight_col: self.weight_col.clone(),
            weighted: self.weighted,
            decimal_comma: self.decimal_comma,
            directed: self.directed,
        })
    }

    /// The adjacency-list reader's options.
    pub fn adjlist(&self) -> Result<AdjOptions> {
        Ok(AdjOptions {
            delimiter: match self.delimiter()? {
                None | Some(Delimiter::Whitespace) => None,
                Some(Delimiter::Byte(c)) => Some(c),
            },
            comment: self.comment.as_bytes().to_vec(),
        })
    }

    /// A column option that names a key (JSON objects have no column indices).
    pub fn key(&self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            Some(ReadValue::Column(Column::Name(s))) => Ok(Some(s)),
            Some(ReadValue::Column(Column::Index(_))) => Err(Error::param(format!(
                "{name} must name a key of the JSON edge objects, not a column index"
            ))),
            _ => Ok(None),
        }
    }
}

/// Parses a memory size: a byte count, or a number with a binary unit (`"2G"`, `"512MiB"`,
/// `"1.5g"`; `1K = 1024`).
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = || {
        Error::param(format!(
            "invalid size {text:?}; use e.g. 2G, 512M, 1.5GiB or a byte count"
        ))
    };
    let t = text.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if "kmgt".contains(c) => (t[..i].trim_end(), " kmgt".find(c).unwrap_or(0)),
        _ => (t, 0),
    };
    // A plain decimal number: digits with at most one point (no sign, no exponent).
    let digits = num.bytes().filter(u8::is_ascii_digit).count();
    let points = num.bytes().filter(|&c| c == b'.').count();
    if digits == 0 || digits + points != num.len() || points > 1 || num.ends_with('.') {
        return Err(bad());
    }
    let value: f64 = num.parse().map_err(|_| bad())?;
    let size = (value * 1024f64.powi(unit as i32)) as u64;
    if size == 0 {
        return Err(Error::param(format!(
            "memory_limit must be > 0, got {text:?}"
        )));
    }
    Ok(size)
}

/// A size in the largest binary unit that writes it exactly (`2G`, `512M`, `1000`).
pub fn format_size(bytes: u64) -> String {
    for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        if bytes != 0 && bytes % (1u64 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_round_trips_through_get_and_set() {
        let d = ReadOptions::default();
        for s in READ_SETTINGS {
            let v = d.get(s.name).expect(s.name);
            let mut o = ReadOptions::default();
            o.set(s.name, v.clone()).expect(s.name);
            assert_eq!(o.get(s.name), Some(v), "{}", s.name);
        }
        assert_eq!(READ_SETTINGS.len(), 18);
        assert!(d.given().is_empty());
        assert!(read_setting("num_nodes").unwrap().formats().is_empty());
        assert_eq!(
            read_setting("merge").unwrap().formats().len(),
            FORMATS.len()
        );
        assert_eq!(read_setting("var").unwrap().formats(), ["mat"]);
    }

    #[test]
    fn sizes_parse_as_the_docs_say() {
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size(" 1.5k ").unwrap(), 1536);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("3 gb").unwrap(), 3 << 30);
        assert_eq!(parse_size(".5M").unwrap(), 512 << 10);
        for bad in [
            "lots", "-1G", "0", "1e3", "G", "1.", "1..2", "", "1.2.3k", "2X",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(format_size(2 << 30), "2G");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(512 << 20), "512M");
    }

    #[test]
    fn choices_and_kinds_are_checked() {
        let mut o = ReadOptions::default();
        assert!(o.set("merge", ReadValue::Text("min".into())).is_err());
        assert!(o.set("merge", ReadValue::Bool(true)).is_err());
        assert!(o.set("nope", ReadValue::None).is_err());
        o.set("merge", ReadValue::Text("max".into())).unwrap();
        assert_eq!(o.merge().unwrap(), Merge::Max);
        o.set("weight_col", ReadValue::Column(Column::Index(2)))
            .unwrap();
        o.set("weighted", ReadValue::Bool(false)).unwrap();
        assert!(o.validate().is_err());
    }

    #[test]
    fn options_apply_only_to_the_formats_that_use_them() {
        let mut o = ReadOptions::default();
        o.set("var", ReadValue::Text("network".into())).unwrap();
        o.set("merge", ReadValue::Text("max".into())).unwrap();
        assert!(o.check_applies("mat").is_ok());
        let e = o.check_applies("edgelist").unwrap_err().to_string();
        assert!(e.contains("var do(es) not apply to edgelist input"), "{e}");
        let mut o = ReadOptions::default();
        o.set("header", ReadValue::Bool(false)).unwrap();
        assert!(o.check_applies("csv").is_ok());
        assert!(o.check_applies("parquet").is_err());
    }
}
