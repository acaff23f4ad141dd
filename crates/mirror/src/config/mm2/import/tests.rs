use super::*;

#[test]
fn env_names() {
    assert_eq!(
        env_name("us-east", "SASL_PASSWORD"),
        "US_EAST_SASL_PASSWORD"
    );
    assert_eq!(
        env_name("1dc", "BOOTSTRAP_SERVERS"),
        "CLUSTER_1DC_BOOTSTRAP_SERVERS"
    );
}
