//! `/about`: what the numbers are and how the board is kept fair: the score
//! formula and its source, the grouping, who counts, what a flag means,
//! names and labels, and what the server stores and never stores.

use axum::response::Response;
use maud::html;

use super::layout;
use crate::ceilings::{BUS_MARGIN, HOST_IOPS_HEADROOM};
use crate::intake::FORMULA_VERSION;
use crate::store::MIN_RANKED_SUBMITTERS;
use crate::store::aggregate::LABEL_AGREEMENT;

pub async fn about() -> Response {
    let formula = storage_scoring::score::formula_lines().join("\n");
    let margin = format!("{:.0}", (BUS_MARGIN - 1.0) * 100.0);
    let body = html! {
        h2 { "How this leaderboard works" }
        p {
            "Cards and drives are benchmarked with " code { "storage-score" } ", which runs the tests of "
            a href="https://github.com/TheRemote/PiBenchmarks" { "PiBenchmarks" } " (its " code { "Storage.sh" }
            ") natively and sends the report when its owner asks. This server checks every report, recomputes its \
             score and class verdict itself, and ranks cards by what their submitters measured."
        }
        h3 #score { "The score" }
        p {
            "The PiBenchmarks score, reproduced to the digit (formula " code { (FORMULA_VERSION) } "), as "
            code { "Storage.sh" } " computes it with " code { "bc" } ":"
        }
        pre { (formula) }
        p {
            "Random 4 KiB writes weigh most: they are what a Raspberry Pi's system card does all day, and what \
             an A1 or A2 card promises. The sequential and cached reads are shown but not scored. The class verdict \
             sets what the card claims (from its own SD Status register) beside what each figure earns, by the SD \
             Association's Physical Layer Simplified Specification."
        }
        h3 #grouping { "Rows and who counts" }
        ul {
            li {
                "A row is one card (its CID: maker, OEM, product name and revision, and capacity) on one board \
                 model and bus mode, scored by one formula. Boards are named as the Raspberry Pi device tree names \
                 them; the board filter also offers families (the Pi 400 and the Compute Module 4 are in the \
                 Raspberry Pi 4 family)."
            }
            li {
                "A row's figures are medians (and p10, p90) over its " strong { "submitters" } ", not its results. A \
                 submitter is a network: the client's /24 for IPv4, its /64 for IPv6. A submitter's several results \
                 in a row count as one sample, their own median: twenty results from one address move a median as \
                 far as one does. The same report sent again, under any key or from any address, counts once."
            }
            li {
                "A row is ranked once " (MIN_RANKED_SUBMITTERS) " submitters have sent public results to it; rows \
                 with fewer are listed after the ranked ones, without a rank."
            }
            li {
                "Medians, p10 and p90 are nearest-rank: every figure shown is one a submitter measured, never an \
                 interpolation or a mean."
            }
        }
        h3 #flags { "Flagged results" }
        p { "A flagged result is kept and shown with its reason, but never ranked or counted. A result is flagged when:" }
        ul {
            li {
                "the run is incomplete (a figure of the score is missing), or ran the shortened " code { "quick" }
                " profile, whose figures are not comparable;"
            }
            li {
                "a figure is beyond what its bus carries, by more than " (margin) "%: the timing mode and clock the \
                 host reported, the USB or PCIe link; or, when the report names no host bus, the fastest bus of its \
                 kind (UHS-I SDR104, 104 MB/s, for an SD card that claims no UHS-II; HS400 for eMMC);"
            }
            li {
                "a 4 KiB random figure is beyond what a Raspberry Pi's SD slot was ever published reaching, with half \
                 as much again as headroom (the published figures are the best cards measured, not the slot's \
                 limit): on the Pi 4 (emmc2), 3200 read / 1203 write IOPS (Raspberry Pi's documentation, "
                code { "accessories/sd-cards/about.adoc" } "; pidramble.com's microSD benchmarks); on the Pi 1–3 and \
                 Zero (sdhost), 1784 / 742 (geerlingguy/turing-pi-cluster#11); on the Pi 5, 7438 / 4119 \
                 (bretmlw/sbc-benchmarks, Raspberry Pi's card review data);"
            }
            li { "the report names no device, or a moderator flagged it." }
        }
        p {
            "A figure beyond every bus of its kind (an SD card faster than SD Express, a SATA disk faster than 6 \
             Gb/s) is refused outright (422), as are negative, non-finite and absurd figures."
        }
        h3 #names { "Names" }
        ul {
            li {
                "The maker comes from the card's manufacturer ID through this project's table, never from what a \
                 report says. The product name and OEM ID must be what a CID can hold; other names are \
                 Unicode-normalised (NFKC) and refused if they hold invisible characters or mix scripts (a Cyrillic \
                 letter in a Latin name), as Unicode's security mechanisms (UTS #39) advise."
            }
            li { "A card's shown class comes from the majority of its submitters, never from its newest result." }
            li {
                "The name on a card's label (" code { "storage-score submit --label \"SanDisk Extreme 64GB\"" }
                ") names the card once " (LABEL_AGREEMENT) " submitters agree on it (case and spacing aside); until \
                 then its CID name is shown. Searches match makers, CID product names and agreed labels."
            }
        }
        h3 #privacy { "What is stored, and what never is" }
        ul {
            li {
                "Stored: the report as checked (identification, figures, latency percentiles, notes), this server's \
                 score and verdict, when it arrived, a hash of the delete token its submitter got once, and a \
                 submitter id: a keyed hash of the client's network under a secret salt that this database keeps, \
                 which compares within this leaderboard and means nothing outside it."
            }
            li {
                "Never stored: IP addresses, serial numbers (the card's PSN is zeroed in the raw CID too; a salted \
                 hash may group repeat runs of one card), host and user names, and paths below a mount point. The \
                 client removes them before sending and this server removes them again from whatever it receives."
            }
            li {
                "Public results are in the " a href="/export.csv" { "CSV" } " and " a href="/export.json" { "JSON" }
                " exports. A submitter can delete their result with its delete token ("
                code { "storage-score submit REPORT --delete" } ")."
            }
        }
        h3 #limits { "Limits" }
        p {
            "A report is at most 256 KiB; each network may submit a limited number of results a minute (429 with "
            code { "Retry-After" } " beyond it). Connections that send nothing for 30 s are closed. The flags above \
             use a " (margin) "% margin on bus ceilings and ×" (HOST_IOPS_HEADROOM) " on published host figures."
        }
    };
    layout("How it works", body)
}
