//! Just enough of a Rust lexer for tidy: which lines hold code, where the
//! keyword `unsafe` is, outside comments, strings and character literals,
//! and what the string literals say. Not a parser: a line-based search would find `unsafe` in a doc
//! comment or a test's string, and count a comment as code.

/// What a source file holds, line by line (1-based numbers, ascending).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lines {
    /// The lines with code on them: not blank, not only comment. A line
    /// inside a multi-line string literal counts.
    pub code: Vec<usize>,
    /// The lines where the keyword `unsafe` is.
    pub unsafe_at: Vec<usize>,
    /// Each string literal's text between its quotes (escapes as written),
    /// with the line it starts on.
    pub strings: Vec<(usize, String)>,
    /// The lines where a `let` follows `&&`: a let chain.
    pub let_chains: Vec<usize>,
    /// The code's tokens with their lines: words, and punctuation one
    /// character at a time; a string or character literal is one `"`.
    pub tokens: Vec<(usize, String)>,
}

/// Scans a source file's text.
pub fn scan(text: &str) -> Lines {
    let mut lx = Lexer { chars: text.chars().collect(), i: 0, line: 1, last_two: [' '; 2], out: Lines::default() };
    while let Some(c) = lx.peek(0) {
        match (c, lx.peek(1)) {
            ('/', Some('/')) => {
                while lx.peek(0).is_some_and(|c| c != '\n') {
                    lx.skip();
                }
            }
            ('/', Some('*')) => lx.block_comment(),
            ('"', _) => {
                lx.token("\"");
                lx.string(0);
            }
            ('\'', _) => lx.quote(),
            (c, _) if is_ident(c) => lx.word(),
            (c, _) => {
                if !c.is_whitespace() {
                    lx.token(&c.to_string());
                }
                lx.code();
            }
        }
    }
    lx.out
}

fn is_ident(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: usize,
    /// The last two characters of code that are not whitespace.
    last_two: [char; 2],
    out: Lines,
}

impl Lexer {
    fn token(&mut self, text: &str) {
        self.out.tokens.push((self.line, text.to_owned()));
    }

    fn peek(&self, n: usize) -> Option<char> {
        self.chars.get(self.i + n).copied()
    }

    /// Consumes a character of code (or of a literal), marking its line.
    fn code(&mut self) {
        let Some(c) = self.peek(0) else { return };
        self.i += 1;
        if c == '\n' {
            self.line += 1;
        } else if !c.is_whitespace() {
            self.last_two = [self.last_two[1], c];
            if self.out.code.last() != Some(&self.line) {
                self.out.code.push(self.line);
            }
        }
    }

    /// Consumes a character of a comment.
    fn skip(&mut self) {
        if self.peek(0) == Some('\n') {
            self.line += 1;
        }
        self.i += 1;
    }

    /// `/* … */`, nested as Rust nests them.
    fn block_comment(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            match (c, self.peek(1)) {
                ('/', Some('*')) => {
                    depth += 1;
                    self.skip();
                    self.skip();
                }
                ('*', Some('/')) => {
                    self.skip();
                    self.skip();
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => self.skip(),
            }
        }
    }

    /// A string from its opening quote: escapes in a plain one, up to the
    /// quote followed by `hashes` `#`s in a raw one.
    fn string(&mut self, hashes: usize) {
        let line = self.line;
        self.code();
        let start = self.i;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' if hashes == 0 => {
                    self.code();
                    self.code();
                }
                '"' if (1..=hashes).all(|n| self.peek(n) == Some('#')) => {
                    self.out.strings.push((line, self.chars[start..self.i].iter().collect()));
                    for _ in 0..=hashes {
                        self.code();
                    }
                    return;
                }
                _ => self.code(),
            }
        }
    }

    /// A character literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a lifetime.
    fn quote(&mut self) {
        self.code();
        if self.peek(0) == Some('\\') || self.peek(1) == Some('\'') {
            self.token("\"");
        }
        if self.peek(0) == Some('\\') {
            self.code();
            self.code();
            while self.peek(0).is_some_and(|c| c != '\'' && c != '\n') {
                self.code();
            }
            self.code();
        } else if self.peek(1) == Some('\'') {
            self.code();
            self.code();
        }
        // Else a lifetime or a label: its name is read as a word next.
    }

    /// An identifier, keyword or number; a raw string when it is `r`, `br`
    /// or `cr` before `"` or `#"`.
    fn word(&mut self) {
        let after_and = self.last_two == ['&', '&'];
        let start = self.i;
        while self.peek(0).is_some_and(is_ident) {
            self.code();
        }
        let word: String = self.chars[start..self.i].iter().collect();
        if word == "unsafe" {
            self.out.unsafe_at.push(self.line);
        }
        if word == "let" && after_and {
            self.out.let_chains.push(self.line);
        }
        if matches!(word.as_str(), "r" | "br" | "cr" | "b" | "c") {
            let hashes = (0..).take_while(|&n| self.peek(n) == Some('#')).count();
            if self.peek(hashes) == Some('"') {
                self.token("\"");
                if word == "b" || word == "c" {
                    // b"…", c"…": escapes as in a plain string.
                    self.string(0);
                    return;
                }
                for _ in 0..hashes {
                    self.code();
                }
                self.string(hashes);
                return;
            }
        }
        self.token(&word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_and_unsafe_outside_comments_and_strings() {
        let text = concat!(
            "//! unsafe in a doc comment\n",          // 1
            "\n",                                     // 2
            "fn f() {\n",                             // 3
            "    let s = \"unsafe { } // no\";\n",    // 4
            "    /* unsafe\n",                        // 5
            "       /* nested */ unsafe */\n",        // 6
            "    unsafe { g() }\n",                   // 7
            "    let c = '\"'; let d = '\\'';\n",     // 8
            "    let r = r#\"a \" unsafe\n",          // 9
            "    \"#; let x: &'static str = \"\";\n", // 10
            "}\n",                                    // 11
            "unsafe impl Send for X {} // SAFETY\n",  // 12
            "#![forbid(unsafe_code)]\n",              // 13
        );
        let lines = scan(text);
        assert_eq!(lines.unsafe_at, [7, 12]);
        assert_eq!(lines.code, [3, 4, 7, 8, 9, 10, 11, 12, 13]);
        let strings: Vec<(usize, &str)> = lines.strings.iter().map(|(n, s)| (*n, s.as_str())).collect();
        assert_eq!(strings, [(4, "unsafe { } // no"), (9, "a \" unsafe\n    "), (10, "")]);
        assert!(lines.let_chains.is_empty());
    }

    #[test]
    fn let_after_and_and_is_a_let_chain() {
        let text = concat!(
            "if a && let Some(x) = y {}\n",    // 1
            "if let Some(x) = y\n",            // 2
            "    && // why\n",                 // 3
            "    let Some(z) = x {}\n",        // 4
            "let s = \"&& let\"; // && let\n", // 5
            "if a && b { let c = 1; }\n",      // 6
            "let t = a & &let_it;\n",          // 7
        );
        assert_eq!(scan(text).let_chains, [1, 4]);
    }
}
