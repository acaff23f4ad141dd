use super::*;

#[test]
fn a_sample_is_found_by_name_and_flow_only() {
    let text = "# HELP strait_scale_generation x\n\
                    strait_scale_generation{flow=\"a\"} 7\n\
                    strait_scale_generation{flow=\"b\"} 9\n\
                    strait_scale_generation_other{flow=\"a\"} 1\n";
    assert_eq!(sample(text, "strait_scale_generation", "a"), Some(7.0));
    assert_eq!(sample(text, "strait_scale_generation", "b"), Some(9.0));
    assert_eq!(sample(text, "strait_scale_generation", "c"), None);
    assert_eq!(sample("", "strait_scale_generation", "a"), None);
}
