"""The KRaft edge: configctl's store on a Kafka 4.x cluster, through its Admin API, with no ZooKeeper."""
