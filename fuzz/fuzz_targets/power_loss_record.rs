//! The power-loss record decoder and the judge over any bytes: never a
//! panic, and a block the judge calls intact is the record itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_powerloss::judge::{Finding, judge};
use storage_powerloss::record::{self, Header, RECORD_BYTES};

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = record::decode(data) {
        assert_eq!(record::decode(&record::encode(&header)), Ok(header));
    }
    let mut block = vec![0u8; RECORD_BYTES];
    let n = data.len().min(RECORD_BYTES);
    block[..n].copy_from_slice(&data[..n]);
    let new = record::encode(&Header { run: [1; 16], cycle: 2, sequence: 3, address: 4096 });
    let old = record::prints(&data[n..]);
    let finding = judge(&block, 4096, &[1; 16], &record::prints(&new), Some(&old));
    if finding == Finding::Intact {
        assert_eq!(block, new);
    }
});
