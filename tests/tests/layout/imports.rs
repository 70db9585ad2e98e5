//! The import graph of one crate's `src`, read from its files (no
//! compiler): which module uses which, so that circles can be found.
//!
//! A module is a file: `lib.rs` is the crate's root (`crate`), `foo.rs` and
//! `foo/mod.rs` are `foo`, `foo/bar.rs` is `foo::bar`. Test code is left
//! out: `tests.rs` files, files under a `tests/` directory, and the body
//! of a `#[cfg(test)] mod NAME { ... }` block (test code may import
//! anything). Inline modules (`mod x { ... }` without `#[cfg(test)]`) count
//! as part of their file.
//!
//! An edge `a -> b` is a real use of something of `b` in `a`:
//!
//! - a path in code or in a private `use` that starts with `crate::`,
//!   `super::` (any number of them), `self::`, the name of a child module
//!   (`mod bar;` puts `bar` in scope), or a name that a `use` bound to a
//!   module (`use crate::report;` then `report::Record`). The path goes to
//!   the deepest module it names; the item at its end is followed through
//!   imports (a named `use`, public or not, or a `pub use` glob) to the
//!   module that defines it, so
//!   importing `crate::capacity::Slo` where `capacity` re-exports `Slo`
//!   from `capacity::model` is an edge to `capacity::model`.
//! - not: `mod bar;` declarations and `pub use` / `pub(crate) use`
//!   re-exports, unless the module itself uses the re-exported name
//!   (`pub(crate) use point::run_point;` then `run_point(..)`). A parent that declares and re-exports its children is a
//!   facade, not a user; a child that uses its parent's items (`super::X`)
//!   is a real edge, so a parent whose code also calls into that child is
//!   a circle (the parent should hold either the shared types or the
//!   behaviour, not both).
//! - a `use` of a whole module (`use crate::report;`) is no edge by itself:
//!   the paths through its name are.
//!
//! What a path resolves to is read from the file tree and the `use` and
//! `pub use` lines only, so a name that is shadowed by a local module-less
//! binding, a macro's expansion, or a `#[path]` attribute are not seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One token of Rust source with comments and literal contents removed.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

/// `text` with comments removed and string and character literals emptied,
/// so that neither a doc comment's `crate::x` nor a string's is read as a
/// path.
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let prev_ident = i > 0 && ident(c[i - 1]);
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == 'r'
            && !prev_ident
            && matches!(c.get(i + 1), Some('"') | Some('#'))
            && c[i + 1..].iter().find(|&&ch| ch != '#') == Some(&'"')
        {
            // A raw string: r"..." or r#"..."#.
            let hashes = c[i + 1..].iter().take_while(|&&ch| ch == '#').count();
            i += 1 + hashes + 1;
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while i < c.len() && !c[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let end = if c.get(i + 1) == Some(&'\\') {
                c[i + 2..]
                    .iter()
                    .position(|&ch| ch == '\'')
                    .map(|p| i + 2 + p)
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    out.push_str("' '");
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn tokens(code: &str) -> Vec<Tok> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok::Sep);
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push(Tok::Punct(c[i]));
            }
            i += 1;
        }
    }
    out
}

fn is_ident(t: Option<&Tok>, s: &str) -> bool {
    matches!(t, Some(Tok::Ident(x)) if x == s)
}

/// `toks` without the bodies of `#[cfg(test)] mod NAME { ... }` blocks.
fn without_test_modules(toks: Vec<Tok>) -> Vec<Tok> {
    let attr: Vec<Tok> = tokens("#[cfg(test)]");
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        if toks[i..].starts_with(&attr) {
            let mut j = i + attr.len();
            if is_ident(toks.get(j), "pub") {
                j += 1;
            }
            if is_ident(toks.get(j), "mod") && toks.get(j + 2) == Some(&Tok::Punct('{')) {
                let mut depth = 0;
                j += 2;
                while j < toks.len() {
                    match toks[j] {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => depth -= 1,
                        _ => {}
                    }
                    j += 1;
                    if depth == 0 {
                        break;
                    }
                }
                i = j;
                continue;
            }
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out
}

/// One name a `use` brings in: the path's segments (ending in `*` for a
/// glob, in `self` for `{self}`) and the name it is bound to.
#[derive(Clone, Debug)]
struct UseLeaf {
    path: Vec<String>,
    name: String,
    public: bool,
}

/// Reads the use tree at `toks[*i]` (after `use`), appending its leaves.
fn use_tree(
    toks: &[Tok],
    i: &mut usize,
    prefix: Vec<String>,
    public: bool,
    out: &mut Vec<UseLeaf>,
) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
            }
            Some(Tok::Punct('*')) => {
                path.push("*".into());
                *i += 1;
                out.push(UseLeaf {
                    path,
                    name: "*".into(),
                    public,
                });
                return;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                while !matches!(toks.get(*i), Some(Tok::Punct('}')) | None) {
                    use_tree(toks, i, path.clone(), public, out);
                    if toks.get(*i) == Some(&Tok::Punct(',')) {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            _ => return,
        }
        match toks.get(*i) {
            Some(Tok::Sep) => *i += 1,
            _ => break,
        }
    }
    let mut name = path.last().cloned().unwrap_or_default();
    if is_ident(toks.get(*i), "as") {
        if let Some(Tok::Ident(alias)) = toks.get(*i + 1) {
            name = alias.clone();
        }
        *i += 2;
    }
    if name == "self" && path.len() >= 2 {
        // `a::{self}` is `a`.
        path.pop();
        name = path.last().cloned().unwrap_or_default();
    }
    out.push(UseLeaf { path, name, public });
}

/// What one file says: its `use` leaves, the other paths in its code, and
/// the names it defines (for globs).
#[derive(Default, Debug)]
struct Parsed {
    uses: Vec<UseLeaf>,
    paths: Vec<Vec<String>>,
    defines: BTreeSet<String>,
    /// Every identifier outside `use` lines: a re-exported name that is
    /// among them is also used here.
    idents: BTreeSet<String>,
}

fn parse(text: &str) -> Parsed {
    let toks = without_test_modules(tokens(&strip(text)));
    let mut p = Parsed::default();
    let mut i = 0;
    while i < toks.len() {
        let prev = if i > 0 { toks.get(i - 1) } else { None };
        match &toks[i] {
            Tok::Ident(s) if s == "use" && toks.get(i + 1) != Some(&Tok::Punct('<')) => {
                // `pub use` or `pub(...) use`: a re-export.
                let public = is_ident(prev, "pub")
                    || (prev == Some(&Tok::Punct(')'))
                        && toks[..i]
                            .iter()
                            .rev()
                            .skip_while(|t| **t != Tok::Punct('('))
                            .nth(1)
                            .is_some_and(|t| is_ident(Some(t), "pub")));
                i += 1;
                if toks.get(i) == Some(&Tok::Sep) {
                    // `use ::extern_crate::...`
                    i += 1;
                    let mut ignored = Vec::new();
                    use_tree(&toks, &mut i, Vec::new(), public, &mut ignored);
                } else {
                    use_tree(&toks, &mut i, Vec::new(), public, &mut p.uses);
                }
            }
            Tok::Ident(s)
                if prev != Some(&Tok::Sep)
                    && prev != Some(&Tok::Punct('$'))
                    && toks.get(i + 1) == Some(&Tok::Sep) =>
            {
                let mut path = vec![s.clone()];
                i += 1;
                while toks.get(i) == Some(&Tok::Sep) {
                    match toks.get(i + 1) {
                        Some(Tok::Ident(x)) => path.push(x.clone()),
                        _ => break,
                    }
                    i += 2;
                }
                p.paths.push(path);
            }
            Tok::Ident(s) if !matches!(toks.get(i + 1), Some(Tok::Sep)) => {
                p.idents.insert(s.clone());
                if matches!(
                    s.as_str(),
                    "struct"
                        | "enum"
                        | "fn"
                        | "trait"
                        | "type"
                        | "const"
                        | "static"
                        | "union"
                        | "mod"
                ) && let Some(Tok::Ident(name)) = toks.get(i + 1)
                {
                    p.defines.insert(name.clone());
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    p
}

/// The module graph of one crate.
pub struct Graph {
    /// Module path (`""` for the root, `a::b`) to its parsed file.
    modules: BTreeMap<String, Parsed>,
    /// Module to the modules it uses.
    pub edges: BTreeMap<String, BTreeSet<String>>,
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}::{name}")
    }
}

fn parent(m: &str) -> Option<String> {
    if m.is_empty() {
        None
    } else {
        Some(
            m.rsplit_once("::")
                .map_or(String::new(), |(p, _)| p.to_string()),
        )
    }
}

/// How a module is named in messages: `crate` for the root.
pub fn display(m: &str) -> &str {
    if m.is_empty() { "crate" } else { m }
}

impl Graph {
    /// Reads every non-test `.rs` file under `src` (a crate's `src`).
    pub fn read(src: &Path) -> Graph {
        let mut files = Vec::new();
        super::rust_files(src, &mut files);
        let mut modules = BTreeMap::new();
        for f in files {
            let rel = f
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
            let test = parts.contains(&"tests") || rel == "main.rs" || parts[0] == "bin";
            if test {
                continue;
            }
            let module = match parts.as_slice() {
                ["lib"] => String::new(),
                [dirs @ .., "mod"] => dirs.join("::"),
                all => all.join("::"),
            };
            modules.insert(module, parse(&std::fs::read_to_string(&f).unwrap()));
        }
        let mut g = Graph {
            modules,
            edges: BTreeMap::new(),
        };
        g.link();
        g
    }

    /// Where a path's first segment points from module `m`, given the
    /// names `scope` binds to modules; the rest of the path is returned.
    fn start<'p>(
        &self,
        m: &str,
        scope: &BTreeMap<String, String>,
        path: &'p [String],
    ) -> Option<(String, &'p [String])> {
        let first = path.first()?;
        match first.as_str() {
            "crate" => Some((String::new(), &path[1..])),
            "self" => Some((m.to_string(), &path[1..])),
            "super" => {
                let mut base = parent(m)?;
                let mut rest = &path[1..];
                while rest.first().is_some_and(|s| s == "super") {
                    base = parent(&base)?;
                    rest = &rest[1..];
                }
                Some((base, rest))
            }
            _ => scope.get(first).map(|b| (b.clone(), &path[1..])),
        }
    }

    /// The deepest module `path` names from `base`, and the segments after it.
    fn descend<'p>(&self, mut base: String, mut rest: &'p [String]) -> (String, &'p [String]) {
        while let Some(next) = rest.first() {
            let m = join(&base, next);
            if !self.modules.contains_key(&m) {
                break;
            }
            base = m;
            rest = &rest[1..];
        }
        (base, rest)
    }

    /// The names module `m` binds to modules: its children, then each
    /// `use` whose whole path is a module.
    fn scope(&self, m: &str) -> BTreeMap<String, String> {
        let mut scope: BTreeMap<String, String> = self
            .modules
            .keys()
            .filter(|c| parent(c).as_deref() == Some(m) && !c.is_empty())
            .map(|c| (c.rsplit("::").next().unwrap().to_string(), c.clone()))
            .collect();
        for u in &self.modules[m].uses {
            if let Some((base, rest)) = self.start(m, &scope, &u.path) {
                let (target, rest) = self.descend(base, rest);
                if rest.is_empty() && u.name != "*" {
                    scope.insert(u.name.clone(), target);
                }
            }
        }
        scope
    }

    /// The module that defines the item `name` that module `m` offers,
    /// following `m`'s re-exports.
    fn follow(
        &self,
        m: &str,
        name: &str,
        scopes: &BTreeMap<String, BTreeMap<String, String>>,
        depth: u32,
    ) -> String {
        if depth > 16 {
            return m.to_string();
        }
        let parsed = &self.modules[m];
        if parsed.defines.contains(name) {
            return m.to_string();
        }
        // Named imports, private ones too: a child's `super::X` may name
        // what its parent imported.
        for u in &parsed.uses {
            if u.name == name {
                return self
                    .resolve(m, &u.path, scopes, depth + 1)
                    .unwrap_or_else(|| m.to_string());
            }
        }
        for u in parsed.uses.iter().filter(|u| u.public && u.name == "*") {
            let module = &u.path[..u.path.len() - 1];
            if let Some(g) = self.resolve(m, module, scopes, depth + 1) {
                let offers = self.modules[&g].defines.contains(name)
                    || self.modules[&g]
                        .uses
                        .iter()
                        .any(|v| v.public && v.name == name);
                if offers {
                    return self.follow(&g, name, scopes, depth + 1);
                }
            }
        }
        m.to_string()
    }

    /// The module a path in module `m` leads to, if it is one of this crate's.
    fn resolve(
        &self,
        m: &str,
        path: &[String],
        scopes: &BTreeMap<String, BTreeMap<String, String>>,
        depth: u32,
    ) -> Option<String> {
        let (base, rest) = self.start(m, &scopes[m], path)?;
        let (base, rest) = self.descend(base, rest);
        match rest.first() {
            Some(item) if item != "*" && item != "self" => {
                Some(self.follow(&base, item, scopes, depth))
            }
            _ => Some(base),
        }
    }

    fn link(&mut self) {
        let scopes: BTreeMap<String, BTreeMap<String, String>> = self
            .modules
            .keys()
            .map(|m| (m.clone(), self.scope(m)))
            .collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (m, parsed) in &self.modules {
            let uses = parsed.uses.iter().filter(|u| {
                // A re-export counts where this module uses the name too.
                !u.public || (u.name != "*" && parsed.idents.contains(&u.name))
            });
            let item_uses = uses.filter(|u| {
                // A `use` of a whole module: the paths through its name count.
                let whole = self
                    .start(m, &scopes[m], &u.path)
                    .map(|(b, r)| self.descend(b, r).1.is_empty());
                u.name == "*" || whole == Some(false)
            });
            let paths = item_uses.map(|u| &u.path).chain(&parsed.paths);
            for path in paths {
                if let Some(to) = self.resolve(m, path, &scopes, 0)
                    && &to != m
                {
                    edges.entry(m.clone()).or_default().insert(to);
                }
            }
        }
        self.edges = edges;
    }

    /// The circles: each strongly connected component of more than one
    /// module, its modules sorted (Tarjan's algorithm).
    pub fn circles(&self) -> Vec<Vec<String>> {
        struct State<'g> {
            edges: &'g BTreeMap<String, BTreeSet<String>>,
            index: BTreeMap<String, usize>,
            low: BTreeMap<String, usize>,
            stack: Vec<String>,
            on_stack: BTreeSet<String>,
            out: Vec<Vec<String>>,
        }
        fn visit(s: &mut State<'_>, v: &str) {
            let n = s.index.len();
            s.index.insert(v.to_string(), n);
            s.low.insert(v.to_string(), n);
            s.stack.push(v.to_string());
            s.on_stack.insert(v.to_string());
            for w in s.edges.get(v).into_iter().flatten() {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if s.low[v] == s.index[v] {
                let mut scc = Vec::new();
                loop {
                    let w = s.stack.pop().unwrap();
                    s.on_stack.remove(&w);
                    let done = w == v;
                    scc.push(w);
                    if done {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    s.out.push(scc);
                }
            }
        }
        let mut s = State {
            edges: &self.edges,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for m in self.modules.keys() {
            if !s.index.contains_key(m) {
                visit(&mut s, m);
            }
        }
        s.out.sort();
        s.out
    }

    /// The edges between the modules of `circle`, for a message.
    pub fn edges_within(&self, circle: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for from in circle {
            for to in self.edges.get(from).into_iter().flatten() {
                if circle.contains(to) {
                    out.push(format!("{} -> {}", display(from), display(to)));
                }
            }
        }
        out
    }
}
