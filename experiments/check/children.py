"""Child processes of a partitioned program (a spawned pool, as DataLoader
workers and torchrun's are started): each prints the SM count PyTorch is
told and runs a kernel, so that a child's own control block is made by
copying its parent's."""
import multiprocessing as mp


def sms(_):
    import torch
    x = torch.ones(1024, device="cuda")
    return torch.cuda.get_device_properties(0).multi_processor_count, float(x.sum())


if __name__ == "__main__":
    with mp.get_context("spawn").Pool(2) as p:
        print("children", p.map(sms, range(2)), flush=True)
